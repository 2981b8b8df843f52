"""The gateway's worker processes, started as early as a run is known (kept light: no litellm, no Prefect).

A worker takes seconds to import litellm. Started when the first stage asked for it, its first seconds went
on the same cores as that stage's first calls, which meanwhile left from the command's own process (and paid
litellm's first-call set-up there too). Started when the command line has read its settings, or when a flow
starts, the workers import while the command imports Prefect, checks its data and starts the flow run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from rpbench.flows.kit.front.registry import run_models
from rpbench.flows.kit.scale.runners import chosen_runner
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm.process_pool import cool_pool, warm_pool
from rpbench.tasks.llm.run_context import current_run


@contextlib.contextmanager
def workers_for_run(models_file: str | None) -> Iterator[None]:
    """The worker pools of the models file (models with ``processes`` > 1), started now.

    The first stage that uses a pool takes it over (the pool stops with the last stage using it, not with the
    run: a report stage does not carry the workers); if none did by the end of this block, the pool's use
    is given back here (the last use stops it). Nested blocks (the command line's around the flow's) count
    as one more use each, all of which the first stage takes over. Stages running elsewhere (on Dask workers)
    start their own, so nothing is started for them here.
    """
    try:
        config = run_models(models_file)
        # A plan sends nothing, so it needs no worker.
        sizes = set() if chosen_runner() != "threads" or current_run().plan is not None else {
            spec.processes for spec in [config.default, *config.roles.values()] if spec.processes > 1}
    except InputError:  # the flow says what is wrong with the file or the runner, as it checks its settings
        sizes = set()
    for size in sorted(sizes):
        warm_pool(size)
    try:
        yield
    finally:
        for size in sorted(sizes):
            cool_pool(size)
