"""The model roles RoleInteract calls. A models file that leaves one out binds it to [default]."""

from __future__ import annotations

ROLES: dict[str, str] = {
    "roleinteract-player": "roleinteract: the settings a model under test (--model given as a model string) answers "
                           "the questions with",
}
