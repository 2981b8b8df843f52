"""The model roles CharacterBench's mode calls. The release's generation script sends no sampling setting
(gpt_call.py); here a 512-token cap too, which a reply of 30 characters never reaches. CharacterJudge is run
greedy with 512 new tokens (model_generation_qwen_chat.py); any judge gets the same here."""

from __future__ import annotations

from rpbench.tasks.llm.config import Role

ROLES: dict[str, Role] = {
    "characterbench-player": Role("characterbench: the settings a model under test (--model as a model string) "
                                  "answers in character with", {"max_tokens": 512}, {"max_tokens": 64}),
    "characterbench-judge": Role("characterbench: scores a reply on one dimension (the release: CharacterJudge, "
                                 "greedy)", {"temperature": 0.0, "max_tokens": 512}, {"max_tokens": 96}),
}
