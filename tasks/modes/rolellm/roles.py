"""The model roles RoleLLM calls. A model under test answers as OpenCompass's RoleBench configuration (which the
RoleLLM authors point to) asks it: temperature 0.7, up to 512 tokens; RoleGPT and the generator sample as the
paper did (0.7 / 0.95; 200 tokens for RoleGPT's answers, 2,000 for the other calls)."""

from __future__ import annotations

from rpbench.tasks.llm.config import Role

ROLES: dict[str, Role] = {
    "rolellm-player": Role("rolellm: the settings a model under test (--model given as a model string) answers in "
                           "role with", {"temperature": 0.7, "max_tokens": 512}, {"max_tokens": 96}),
    "rolellm-rolegpt": Role("rolellm general: plays each role to answer general instructions (the references and "
                            "the RoleGPT baseline of RoleBench-general)",
                            {"temperature": 0.7, "top_p": 0.95, "max_tokens": 200}, {"max_tokens": 96}),
    "rolellm-generator": Role("rolellm context-instruct, profile, select: writes triplets from a role's profile, "
                              "role descriptions and catchphrases, and judges scripts for distinct roles",
                              {"temperature": 0.7, "top_p": 0.95, "max_tokens": 2000},
                              {"max_tokens": 1024, "reasoning_chars": 120}),
    "rolellm-judge": Role("rolellm: the settings a ranking judge (--judge given as a model string) ranks answers "
                          "with", {"temperature": 0.0, "max_tokens": 1024}, {"max_tokens": 400, "reasoning_chars": 80}),
}
