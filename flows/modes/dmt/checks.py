"""DMT-RoleBench's input checks, run by the command before any flow starts (and by the flow itself).

Nothing here imports Prefect or the gateway, so a bad seed file or an unknown model is one line at once."""

from __future__ import annotations

from rpbench.flows.kit.front.systems import System, evaluation_systems
from rpbench.flows.modes.dmt.settings import DmtSettings
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.dmt.given import read_dialogues
from rpbench.tasks.modes.dmt.records import Seed
from rpbench.tasks.modes.dmt.seeds import dialogue_id, load_seeds


def select(seeds: list[Seed], only: list[str], formats: list[str], path: str) -> list[tuple[Seed, str]]:
    """The (seed, format) dialogues a run covers; an id that matches nothing is an input error."""
    known = {s.id for s in seeds}
    for sid in only:
        if sid not in known:
            raise InputError(f"--seed-id in {path}: unknown seed '{sid}' (known: {', '.join(sorted(known))})")
    picked: list[tuple[Seed, str]] = [(s, f) for s in seeds if not only or s.id in only
                                      for f in s.formats if not formats or f in formats]
    if not picked:
        raise InputError(f"{path}: no seed has the formats asked for ({', '.join(formats)})")
    return picked


def check_run(s: DmtSettings) -> tuple[list[System], int]:
    """The systems (models resolved to roles, dialogue files read) and how many dialogues each has: every
    input error before any call."""
    picked = select(load_seeds(s.seeds), s.only_seeds, list(s.formats), s.seeds)
    known = [dialogue_id(seed, fmt) for seed, fmt in picked]  # answers may hold more than the limit keeps
    return evaluation_systems(s, "dmt-player", known, "dialogues", read_dialogues), len(picked[:s.limit])
