"""CoSER's input checks, run once per run (``checked``): Prefect-free, so a bad file or name is one line."""

from __future__ import annotations

from dataclasses import dataclass

from rpbench.flows.kit.front.systems import System, evaluation_systems, judge_role
from rpbench.flows.modes.coser.settings import CoserSettings
from rpbench.prompts.releases import require
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.coser.loader import load_circumstances, read_simulations
from rpbench.tasks.modes.coser.release import RELEASE


@dataclass(frozen=True)
class Inputs:
    systems: list[System]  # the models that act, then the simulation files
    critic: str  # the critic's role
    circumstances: int  # how many the run covers
    empty_thoughts: int  # key characters of those whose inner thought is given empty (their actors get none)


def check_run(s: CoserSettings) -> Inputs:
    """Every input error before any call: the release's files, the test set, the models, the critic and the
    simulation files."""
    require([RELEASE])  # every prompt's words come from CoSER's code (the critic's always runs)
    every = load_circumstances(s.data)
    for c in every[:s.limit]:
        if s.continue_from >= len(c.original):
            raise InputError(f"--continue-from {s.continue_from}: circumstance '{c.circumstance_id}' has "
                             f"{len(c.original)} turns in the book, so no model would act in it (the first N "
                             "turns come from the book: give fewer)")
    systems = evaluation_systems(s, "coser-actor", {c.circumstance_id: c for c in every}, "simulations",
                                 read_simulations)
    critic = judge_role(s, s.judge, like="coser-critic")
    covered = every[:s.limit]
    return Inputs(systems, critic, len(covered), sum(not m.text.strip() for c in covered for m in c.motivations))
