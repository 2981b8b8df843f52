"""Serve rpbench's flows as Prefect deployments, with example schedules.

Every flow of every registered benchmark mode, LoRA training and the suite are served on demand, and every example
schedule a mode offers (its ``schedules`` hook: FURINA's nightly evaluation and weekly pool refresh) is served
with its own parameters; override any field when triggering a run. Start with ``rpbench deploy`` (or ``python
-m rpbench.deployments.serve``) with PREFECT_API_URL pointing at a Prefect server (``prefect server start``);
trigger a run from the UI, with ``rpbench trigger FLOW/DEPLOYMENT --param key=value``, or from code
(``rpbench.deployments.trigger``).

``rpbench deploy --pool NAME`` registers the same deployments in a process work pool instead of serving them:
Prefect workers (``prefect worker start --pool NAME``, on any machine with rpbench installed) then run them,
importing each flow by its module path, so no code upload or image is needed.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from prefect import deploy, serve
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.deployments.runner import EntrypointType
from prefect.exceptions import ObjectAlreadyExists
from prefect.schedules import Cron
from prefect.utilities.asyncutils import run_coro_as_sync

from rpbench.flows.kit.front.registry import modes
from rpbench.flows.suite.flow import suite
from rpbench.flows.training.flows import train_lora_flow

# What a work pool's workers need to run a flow the way this process would: the runner choice (see
# flows/kit/scale/runners.py). Keys never travel this way: each worker reads its own environment.
RUNNER_ENV = ("RPBENCH_RUNNER", "RPBENCH_DASK_ADDRESS", "RPBENCH_DASK_WORKERS")


def deployments(**options: Any) -> list[Any]:
    """Every deployment; ``options`` go to each ``to_deployment`` (an entrypoint type, job variables)."""
    out = []
    for mode in modes().values():
        flows = mode.load_flows()
        out += [flow.to_deployment(name="on-demand", tags=["rpbench", mode.name], **options)
                for flow in flows.values()]
        for plan in mode.load_schedules():
            if plan.flow not in flows:
                raise ValueError(f"mode {mode.name}: schedule {plan.name} names flow '{plan.flow}', which it does "
                                 f"not have (it has: {', '.join(flows)})")
            out.append(flows[plan.flow].to_deployment(
                name=plan.name, description=plan.description, tags=["rpbench", mode.name, "scheduled"],
                parameters={"settings": dict(plan.parameters())},
                schedules=[Cron(plan.cron, timezone="UTC")], **options))
    out.append(train_lora_flow.to_deployment(name="on-demand", tags=["rpbench", "training"], **options))
    out.append(suite.to_deployment(name="on-demand", tags=["rpbench", "suite"], **options))
    return out


def ensure_process_pool(name: str) -> None:
    """The process work pool ``name``, created if the server has none of that name (an existing one is kept)."""
    async def create() -> None:
        async with get_client() as client:
            with contextlib.suppress(ObjectAlreadyExists):
                await client.create_work_pool(WorkPoolCreate(name=name, type="process"))

    run_coro_as_sync(create())


def register_in_pool(pool: str) -> list[str]:
    """Register every deployment in the process work pool ``pool``; returns their names."""
    ensure_process_pool(pool)
    env = {k: os.environ[k] for k in RUNNER_ENV if os.environ.get(k)}
    made = deployments(entrypoint_type=EntrypointType.MODULE_PATH, job_variables={"env": env} if env else None)
    deploy(*made, work_pool_name=pool, build=False, push=False, print_next_steps_message=False)
    return [f"{d.flow_name}/{d.name}" for d in made]


def main() -> None:
    serve(*deployments(), pause_on_shutdown=False)


if __name__ == "__main__":
    main()
