"""The model roles RoleLLM calls. A models file that leaves one out binds it to [default]."""

from __future__ import annotations

ROLES: dict[str, str] = {
    "rolellm-player": "rolellm: the settings a model under test (--model given as a model string) answers in role with",
    "rolellm-rolegpt": "rolellm general: plays each role to answer general instructions (the references and the "
                       "RoleGPT baseline of RoleBench-general)",
    "rolellm-generator": "rolellm context-instruct, profile, select: writes triplets from a role's profile, "
                         "role descriptions and catchphrases, and judges scripts for distinct roles",
    "rolellm-judge": "rolellm: the settings a ranking judge (--judge given as a model string) ranks answers with",
}
