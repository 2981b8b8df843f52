"""The model roles PingPong calls, with the settings its release sends (ping_pong_bench, run_eval_v2.py and
provider.py): the player at 0.6 / 0.9 with 1,536 tokens, the interrogator at 0.8 / 0.95 with 1,024, the judge at
0.1 / 0.95 with 4,096; v1's tester (run_eval_v1.py) at 0.1 / 0.9 over the provider's default 1,536 tokens."""

from __future__ import annotations

from rpbench.tasks.llm.config import Role

ROLES: dict[str, Role] = {
    "player": Role("pingpong: the settings a model under test (--model given as a model string) plays its card "
                   "with", {"temperature": 0.6, "top_p": 0.9, "max_tokens": 1536}, {"max_tokens": 64}),
    "interrogator": Role("pingpong: emulates the user; sees the card's summary and the situation, writes each "
                         "message", {"temperature": 0.8, "top_p": 0.95, "max_tokens": 1024}, {"max_tokens": 96}),
    "pingpong-judge": Role("pingpong: the settings a judge (--judge given as a model string) scores every turn with",
                           {"temperature": 0.1, "top_p": 0.95, "max_tokens": 4096},
                           {"max_tokens": 720, "reasoning_chars": 48}),
    "tester": Role("pingpong v1: one model that writes the user's messages and grades each reply on 1-10",
                   {"temperature": 0.1, "top_p": 0.9, "max_tokens": 1536}, {"max_tokens": 400, "reasoning_chars": 48}),
}
