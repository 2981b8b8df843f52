"""The model roles DMT-RoleBench calls, with the settings of the dmt-paper preset for any real model (the paper
gives none of its own: the tested models sample at 0.7 with room for a full reply, the generator at 0.7, the
judge greedily)."""

from __future__ import annotations

from rpbench.tasks.llm.config import Role

ROLES: dict[str, Role] = {
    "dmt-player": Role("dmt: the settings a model under test (--model given as a model string) plays its role with",
                       {"temperature": 0.7, "max_tokens": 512}, {"max_tokens": 64}),
    "dmt-generator": Role("dmt: the user simulator; checks whether to stop, plans and writes each query, checks it",
                          {"temperature": 0.7, "max_tokens": 1024}, {"max_tokens": 160, "reasoning_chars": 80}),
    "dmt-judge": Role("dmt: labels every round good or bad on each metric of the role type",
                      {"temperature": 0.0, "max_tokens": 256}, {"max_tokens": 96, "reasoning_chars": 80}),
}
