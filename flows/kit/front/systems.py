"""The systems a run puts on its leaderboard: a model asked through its role, or answers a user already has.

Every mode that takes ``--model`` and ``--answers`` reads them here, once: the answer files
checked (``NAME=FILE``, each file present, no name twice), a name given both ways refused, and each system's
stage parameters (``name``, ``role``, ``given``, ``shard``) made the same way. Prefect-free: the commands'
input checks use it before any flow starts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm.given import given_systems


def slug(text: str) -> str:
    """A name as a folder-safe shard name (lower case, dashes)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


@dataclass(frozen=True)
class System:
    """One row of the leaderboard: ``role`` names the model asked, else ``answers`` the file read instead."""

    name: str
    role: str | None = None
    answers: str | None = None

    @property
    def shard(self) -> str:
        return slug(self.name)

    def params(self) -> dict[str, Any]:
        """What a mode's per-system stage takes to know its system: its name, role or file, and shard."""
        return {"name": self.name, "role": self.role, "given": self.answers, "shard": self.shard}


def read_systems(roles: Mapping[str, str], answers: list[str], *, model_option: str = "--model",
                 what: str = "answers", reserved: Mapping[str, str] | None = None) -> list[System]:
    """The models asked (``roles``: name -> role, resolved already) then the answer files (``--answers``,
    ``NAME=FILE`` or ``FILE``); a name given both ways is an error (``what`` the files hold, for its message), as
    is a name the run gives a system of its own (``reserved``: name -> what it names, such as a baseline)."""
    given, reserved = given_systems(answers), reserved or {}
    both = sorted(set(roles) & set(given))
    if both:
        raise InputError(f"--answers: '{both[0]}' is also a {model_option}; name the {what} otherwise (NAME=FILE)")
    taken = sorted({*roles, *given} & set(reserved))
    if taken:  # two systems under one name would share, and mix, one leaderboard row
        option = model_option if taken[0] in roles else "--answers"
        raise InputError(f"{option}: '{taken[0]}' is the name of {reserved[taken[0]]} in this run; give it "
                         f"another name{' (NAME=FILE)' if option == '--answers' else ''}")
    return [System(n, role=r) for n, r in roles.items()] + [System(n, answers=p) for n, p in given.items()]


def evaluation_systems(settings: Any, like: str, known: Any = None, what: str = "answers",
                       read: Callable[[str, Any], object] | None = None,
                       reserved: Mapping[str, str] | None = None) -> list[System]:
    """An evaluation's systems from its settings' ``--model`` (each resolved to a role; a model string gets the
    settings of role ``like``) and ``--answers`` (each file read by ``read``, JSONL answers by default, its ids
    checked against ``known``); none may take a ``reserved`` name (read_systems)."""
    from rpbench.flows.kit.front.registry import builtin_roles, run_models
    from rpbench.tasks.llm.given import read_answers
    from rpbench.tasks.llm.names import resolve_all

    roles = resolve_all(run_models(settings.models_file), settings.models, builtin_roles(), like=like,
                        option="--model")
    systems = read_systems(roles, settings.answers, what=what, reserved=reserved)
    for x in systems:
        if x.answers:
            if read is not None:
                read(x.answers, known)
            else:  # under the field the mode's answer files hold their answers in
                read_answers(x.answers, known, getattr(settings, "answer_field", "answer"))
    return systems


def judge_role(settings: Any, name: str, like: str, option: str = "--judge") -> str:
    """The role a judge given as a role name or a model string resolves to (a model string gets ``like``'s
    settings)."""
    from rpbench.flows.kit.front.registry import builtin_roles, run_models
    from rpbench.tasks.llm.names import resolve_all

    return resolve_all(run_models(settings.models_file), [name], builtin_roles(), like=like, option=option)[name]
