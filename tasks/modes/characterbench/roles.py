"""CharacterBench's roles. The release generates with no sampling setting (gpt_call.py; here a 512-token cap a
30-character reply never reaches) and asks CharacterJudge with temperature 0 and 512 new tokens
(model_generation_qwen_chat.py's payload); so is any judge here."""

from __future__ import annotations

from rpbench.tasks.llm.config import Role

ROLES: dict[str, Role] = {
    "characterbench-player": Role("characterbench: a model under test (--model as a model string) replies with",
                                  {"temperature": None, "max_tokens": 512}, {"temperature": 0.0, "max_tokens": 64}),
    "characterbench-judge": Role("characterbench: scores a reply on one dimension (the release: CharacterJudge, "
                                 "temperature 0)", {"temperature": 0.0, "max_tokens": 512}, {"max_tokens": 96}),
}
