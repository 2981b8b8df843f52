"""Benchmark modes as plug-ins: a small declaration and a registry that fails loudly on an unknown name.

A mode owns its stages, prompts, record types and tables, its default roles,
its metrics and its report sections; shared code (gateway, storage,
statistics, leaderboard, reports, CLI scaffolding) reads them from here.
Modes register through the ``rpbench.modes`` entry point group (one line in a
package's pyproject.toml) or by calling ``register`` (tests, notebooks).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.core.errors import unknown_name
from rpbench.tasks.reports.spec import ReportSpec

ENTRY_POINTS = "rpbench.modes"


@dataclass(frozen=True)
class SmokeStep:
    """One command of a mode's smoke scenario: ``rpbench *args``, writing its tables into ``out``.

    ``uses_models``: the command calls models, so a harness adds ``--models`` and ``--cache`` to it.
    """

    name: str
    args: tuple[str, ...]
    out: Path
    uses_models: bool = True


@dataclass(frozen=True)
class BenchmarkMode:
    name: str
    description: str
    # Built-in roles and what each does; a models file that leaves one out binds it to [default].
    roles: Mapping[str, str]
    # Its item-level table, and how that becomes model scores, a leaderboard and a report.
    item_table: TableSpec[Any]
    report: ReportSpec
    # Its flows by short name, loaded on demand (deployments serve them).
    flows: Callable[[], Mapping[str, Any]] = dict
    # Adds its commands to a Typer app: `rpbench <name> ...`, or at the top level when ``commands_at_top``.
    commands: Callable[[Any], None] | None = None
    commands_at_top: bool = False
    tables: Sequence[TableSpec[Any]] = ()
    # Its flows end to end on shipped samples, as commands in order, small enough for a test: given a work
    # folder, the steps. The hardening tests (kills and resumes, injected faults, the secrets scan) run
    # this for every registered mode against a loopback server; a mode without one fails those tests.
    smoke: Callable[[Path], Sequence[SmokeStep]] | None = None


_modes: dict[str, BenchmarkMode] = {}
_discovered = False
_lock = threading.Lock()


def register(mode: BenchmarkMode) -> BenchmarkMode:
    """Add a mode (a second mode of the same name replaces the first, so a re-imported module is harmless)."""
    with _lock:
        _modes[mode.name] = mode
    return mode


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    for ep in entry_points(group=ENTRY_POINTS):
        mode = ep.load()
        if not isinstance(mode, BenchmarkMode):
            raise TypeError(f"entry point {ep.name} ({ep.value}) is not a BenchmarkMode")
        register(mode)


def modes() -> dict[str, BenchmarkMode]:
    _discover()
    with _lock:
        return dict(sorted(_modes.items()))


def get_mode(name: str) -> BenchmarkMode:
    """The mode called ``name``; an unknown name is an input error listing the modes there are."""
    known = modes()
    if name not in known:
        raise unknown_name("benchmark mode", name, known)
    return known[name]


def builtin_roles() -> set[str]:
    """Every role some registered mode declares: a models file may leave these out."""
    return {role for mode in modes().values() for role in mode.roles}
