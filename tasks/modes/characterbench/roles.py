"""CharacterBench's roles. The release generates with no sampling setting (gpt_call.py; here a 512-token cap a
30-character reply never reaches) and runs CharacterJudge greedy with 512 new tokens; so does any judge here."""

from __future__ import annotations

from rpbench.tasks.llm.config import Role

ROLES: dict[str, Role] = {
    "characterbench-player": Role("characterbench: a model under test (--model as a model string) replies with",
                                  {"temperature": None, "max_tokens": 512}, {"temperature": 0.0, "max_tokens": 64}),
    "characterbench-judge": Role("characterbench: scores a reply on one dimension (the release: CharacterJudge, "
                                 "greedy)", {"temperature": 0.0, "max_tokens": 512}, {"max_tokens": 96}),
}
