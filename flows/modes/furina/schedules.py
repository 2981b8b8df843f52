"""FURINA's example schedules for `rpbench deploy`: a nightly re-evaluation of the configured models against a
stored benchmark (03:00 UTC), and a weekly refresh of the pool from the books dropped into a folder (Mondays
02:00 UTC: a folder stands for the books in it when the run starts, and books already in the pool are cached
stages, so only new books cost calls). Edit them for your folders and models, or override any field when
triggering a run."""

from __future__ import annotations

from typing import Any

from rpbench.flows.kit.front.registry import Schedule


def _nightly_eval() -> dict[str, Any]:
    from rpbench.flows.modes.furina.settings import EvalSettings

    return EvalSettings(bench="runs/bench", models=["local-greedy"], out="runs/eval-nightly").model_dump()


def _weekly_pool() -> dict[str, Any]:
    # Raw parameters, not PoolSettings(...).model_dump(): that would list today's books, and the schedule must
    # read the folder afresh at each run.
    return {"books": ["books/inbox"], "out": "runs/pool"}


def schedules() -> list[Schedule]:
    return [
        Schedule("evaluate", "nightly-eval", "0 3 * * *", "re-evaluate the configured models every night",
                 _nightly_eval),
        Schedule("build-pool", "weekly-pool-refresh", "0 2 * * 1", "add new books from a folder every week",
                 _weekly_pool),
    ]
