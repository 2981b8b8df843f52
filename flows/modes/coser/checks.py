"""CoSER's input checks, run once per run (``checked``): Prefect-free, so a bad file or name is one line."""

from __future__ import annotations

from dataclasses import dataclass

from rpbench.flows.kit.front.registry import builtin_roles, models_config
from rpbench.flows.kit.front.systems import System, read_systems
from rpbench.flows.modes.coser.settings import CoserSettings
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm.names import resolve_all
from rpbench.tasks.modes.coser.loader import load_circumstances, read_simulations


@dataclass(frozen=True)
class Inputs:
    systems: list[System]  # the models that act, then the simulation files
    critic: str  # the critic's role
    circumstances: int  # how many the run covers
    empty_thoughts: int  # key characters of those whose inner thought is given empty (their actors get none)


def check_run(s: CoserSettings) -> Inputs:
    """Every input error before any call: the test set, the models, the critic and the simulation files."""
    every = load_circumstances(s.data)
    for c in every[:s.limit]:
        if s.continue_from >= len(c.original):
            raise InputError(f"--continue-from {s.continue_from}: circumstance '{c.circumstance_id}' has "
                             f"{len(c.original)} turns in the book, so no model would act in it (the first N "
                             "turns come from the book: give fewer)")
    config = models_config(s.models_file)
    roles = resolve_all(config, s.models, builtin_roles(), like="coser-actor", option="--model")
    critic = resolve_all(config, [s.judge], builtin_roles(), like="coser-critic", option="--judge")[s.judge]
    systems = read_systems(roles, s.answers, what="simulations")
    known = {c.circumstance_id: c for c in every}
    for x in systems:
        if x.answers:
            read_simulations(x.answers, known)
    covered = every[:s.limit]
    return Inputs(systems, critic, len(covered), sum(not m.text.strip() for c in covered for m in c.motivations))
