"""The model roles DMT-RoleBench calls. A models file that leaves one out binds it to [default]."""

from __future__ import annotations

ROLES: dict[str, str] = {
    "dmt-player": "dmt: the settings a model under test (--model given as a model string) plays its role with",
    "dmt-generator": "dmt: the user simulator; checks whether to stop, plans and writes each query, checks it",
    "dmt-judge": "dmt: labels every round good or bad on each metric of the role type",
}
