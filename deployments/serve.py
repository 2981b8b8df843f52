"""Serve rpbench's flows as Prefect deployments, with a nightly evaluation schedule.

Every flow of every registered benchmark mode, and LoRA training, is served on demand; the
nightly evaluation's parameters are an ``EvalSettings`` (edit NIGHTLY_EVAL for
your benchmark folder and models). Run ``python -m rpbench.deployments.serve``
with PREFECT_API_URL pointing at a Prefect server (``prefect server start``);
trigger a run from the UI, from the CLI
(``prefect deployment run 'rpbench-evaluate/nightly-eval'``) or from code with
``prefect.deployments.run_deployment``.
"""

from __future__ import annotations

from typing import Any

from prefect import serve
from prefect.schedules import Cron

from rpbench.flows.kit.registry import modes
from rpbench.flows.modes.furina.evaluate import evaluate
from rpbench.flows.modes.furina.settings import EvalSettings
from rpbench.flows.training.flows import train_lora_flow

NIGHTLY_EVAL = EvalSettings(bench="runs/bench", models=["local-greedy"], out="runs/eval-nightly")


def deployments() -> list[Any]:
    out = [flow.to_deployment(name="on-demand", tags=["rpbench", mode.name])
           for mode in modes().values() for flow in mode.flows().values()]
    out.append(train_lora_flow.to_deployment(name="on-demand", tags=["rpbench", "training"]))
    out.append(evaluate.to_deployment(name="nightly-eval", tags=["rpbench", "furina", "scheduled"],
                                      parameters={"settings": NIGHTLY_EVAL.model_dump()},
                                      schedules=[Cron("0 3 * * *", timezone="UTC")]))
    return out


if __name__ == "__main__":
    serve(*deployments(), pause_on_shutdown=False)
