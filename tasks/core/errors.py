"""Errors a user can act on.

An ``InputError`` names the file, the record and the field that are wrong. The
CLI prints its message on one line and exits non-zero, with no traceback.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from pydantic import ValidationError

T = TypeVar("T")


class InputError(Exception):
    """Bad input from the user: a file, a record, a field or a name that cannot be used."""


class RunFailed(Exception):
    """A run that did its work and wrote everything, but lost more to failures than the user allows (or a stage
    got no usable reply at all). The flow ends Failed; the command prints the reasons and exits 3."""

    def __init__(self, out: str, reasons: list[str], failures: dict[str, dict[str, int]]) -> None:
        super().__init__("; ".join(reasons))
        self.out, self.reasons, self.failures = out, reasons, failures

    def lines(self) -> list[str]:
        """What the command prints: the failures by stage and kind first, then why the run failed."""
        out = [f"failed {stage}: " + ", ".join(f"{kind} {n}" for kind, n in kinds.items())
               for stage, kinds in self.failures.items()]
        out += [f"run failed: {reason}" for reason in self.reasons]
        return [*out, f"everything the run made is in {self.out} (manifest.json: outcome)"]


class ModelUnusable(Exception):
    """A model this run needs cannot be used at all: its key variable is missing, the provider refused the key
    or the permission, or does not know the model. Every later call would fail the same way, so the run stops at
    the first such reply (never retried) and the command prints this one line and exits 3."""

    def __init__(self, role: str, model: str, error: str, key_env: str | None = None) -> None:
        super().__init__(role, model, error, key_env)  # the args rebuild it when a worker process pickles it
        self.role, self.model, self.error, self.key_env = role, model, error, key_env

    def __str__(self) -> str:
        key = f"; its key is read from {self.key_env}" if self.key_env else ""
        return f"model {self.model} (role {self.role}) cannot be used: {self.error}{key}"


def close_match(name: str, known: Iterable[str], cutoff: float = 0.75) -> str | None:
    """The known name ``name`` is most likely a typo of, if one is close enough."""
    near = difflib.get_close_matches(name, sorted(set(known)), n=1, cutoff=cutoff)
    return near[0] if near else None


def unknown_name(kind: str, name: str, known: Iterable[str], hint: str = "") -> InputError:
    """The error for a name that resolves to nothing: it lists the names that do exist."""
    names = sorted(set(known))
    # A typo is the usual cause: name what was likely meant, ahead of the whole list.
    near = close_match(name, names)
    guess = f"did you mean '{near}'? " if near else ""
    return InputError(f"unknown {kind} '{name}' ({guess}known: {', '.join(names) or 'none'})"
                      f"{'; ' + hint if hint else ''}")


def plain_error(text: str, width: int = 300) -> str:
    """A stored error ("Type: what went wrong") as one short line, without litellm's repeats of the type
    ("InternalServerError: litellm.InternalServerError: InternalServerError: ...")."""
    name, sep, rest = text.partition(":")
    rest = re.sub(rf"^(?:\s*(?:litellm\.)?{re.escape(name)}:)+", "", rest).strip()
    line = f"{name}: {rest}" if sep and rest else name
    return (line.splitlines() or [""])[0][:width]


def first_error(exc: ValidationError) -> tuple[str, str]:
    """The first problem of a pydantic ValidationError as (dotted field path, message fit for a user)."""
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "missing":
        msg = "missing"
    elif err["type"] == "literal_error":
        expected = str((err.get("ctx") or {}).get("expected", "")).replace("'", "")
        what = loc[-1] if loc and not loc[-1].isdigit() else "value"
        msg = f"unknown {what} '{err.get('input')}' (use {expected})"
    return ".".join(loc) or "record", msg


def duplicates(values: Sequence[T]) -> list[T]:
    """The values that occur more than once, sorted."""
    seen: set[Any] = set()
    dupes: set[Any] = set()
    for v in values:
        (dupes if v in seen else seen).add(v)
    return sorted(dupes)
