"""Serve rpbench's flows as Prefect deployments, with a nightly evaluation schedule.

Run ``python -m deployments.serve`` with PREFECT_API_URL pointing at a Prefect server
(``prefect server start``). The process registers the deployments and runs their
flow runs; trigger one from the UI, from the CLI
(``prefect deployment run 'rpbench-evaluate/nightly-eval'``) or from code:
``prefect.deployments.run_deployment("rpbench-evaluate/nightly-eval", parameters={...})``.
Edit NIGHTLY_EVAL for your benchmark folder and models.
"""

from __future__ import annotations

from prefect import serve
from prefect.schedules import Cron

from rpbench.flows.modes.furina.build import build_benchmark
from rpbench.flows.modes.furina.characters import synthesize_characters
from rpbench.flows.modes.furina.evaluate import evaluate
from rpbench.flows.modes.furina.pool import build_pool

NIGHTLY_EVAL = {"bench": "runs/bench", "models": ["local-greedy"], "out": "runs/eval-nightly"}


def deployments() -> list:
    return [
        build_pool.to_deployment(name="on-demand", tags=["rpbench"]),
        synthesize_characters.to_deployment(name="on-demand", tags=["rpbench"]),
        build_benchmark.to_deployment(name="on-demand", tags=["rpbench"]),
        evaluate.to_deployment(name="on-demand", tags=["rpbench"]),
        evaluate.to_deployment(name="nightly-eval", tags=["rpbench", "scheduled"], parameters=NIGHTLY_EVAL,
                               schedules=[Cron("0 3 * * *", timezone="UTC")]),
    ]


if __name__ == "__main__":
    serve(*deployments(), pause_on_shutdown=False)
