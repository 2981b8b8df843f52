"""Serve rpbench's flows as Prefect deployments, with example schedules.

Every flow of every registered benchmark mode, and LoRA training, is served on demand. Two examples are
scheduled: a nightly re-evaluation of the configured models against a stored benchmark (NIGHTLY_EVAL,
03:00 UTC) and a weekly refresh of the pool from the books dropped into a folder (WEEKLY_POOL, Mondays 02:00
UTC: a folder stands for the books in it when the run starts, and books already in the pool are cached
stages, so only new books cost calls). Edit them for your folders and models, or override any field when
triggering a run. Start with ``rpbench deploy`` (or ``python -m rpbench.deployments.serve``) with
PREFECT_API_URL pointing at a Prefect server (``prefect server start``); trigger a run from the UI, with
``rpbench trigger FLOW/DEPLOYMENT --param key=value``, or from code (``rpbench.deployments.trigger``).
"""

from __future__ import annotations

from typing import Any

from prefect import serve
from prefect.schedules import Cron

from rpbench.flows.kit.registry import modes
from rpbench.flows.modes.furina.evaluate import evaluate
from rpbench.flows.modes.furina.pool import build_pool
from rpbench.flows.modes.furina.settings import EvalSettings
from rpbench.flows.training.flows import train_lora_flow

NIGHTLY_EVAL = EvalSettings(bench="runs/bench", models=["local-greedy"], out="runs/eval-nightly")
# Raw parameters, not PoolSettings(...).model_dump(): that would list today's books, and the schedule must read
# the folder afresh at each run.
WEEKLY_POOL: dict[str, Any] = {"books": ["books/inbox"], "out": "runs/pool"}


def deployments() -> list[Any]:
    out = [flow.to_deployment(name="on-demand", tags=["rpbench", mode.name])
           for mode in modes().values() for flow in mode.flows().values()]
    out.append(train_lora_flow.to_deployment(name="on-demand", tags=["rpbench", "training"]))
    out.append(evaluate.to_deployment(name="nightly-eval", tags=["rpbench", "furina", "scheduled"],
                                      parameters={"settings": NIGHTLY_EVAL.model_dump()},
                                      schedules=[Cron("0 3 * * *", timezone="UTC")]))
    out.append(build_pool.to_deployment(name="weekly-pool-refresh", tags=["rpbench", "furina", "scheduled"],
                                        parameters={"settings": WEEKLY_POOL},
                                        schedules=[Cron("0 2 * * 1", timezone="UTC")]))
    return out


def main() -> None:
    serve(*deployments(), pause_on_shutdown=False)


if __name__ == "__main__":
    main()
