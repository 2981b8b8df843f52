"""Where a flow's stage shards run: threads in the flow's process (the default), or a Dask cluster.

The choice belongs to the machine a flow runs on, not to the benchmark, so it is not a settings field (a
cached stage stays cached whichever runner ran it): it comes from the environment, which the command line
(``rpbench --runner dask ...``), a served deployment (``rpbench deploy --runner dask``) or a work pool's job
variables set.

- ``RPBENCH_RUNNER``: ``threads`` (default) or ``dask``.
- ``RPBENCH_DASK_ADDRESS``: a running Dask scheduler (``tcp://host:8786``); without it each flow run starts
  a local cluster of worker processes and stops it at the end.
- ``RPBENCH_DASK_WORKERS``: worker processes of that local cluster (default 2).

Stage shards are Prefect tasks either way: only where they execute changes. LLM calls stay bounded per
endpoint by the gateway in each process, and across processes by the shared limits of the Prefect server.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from rpbench.tasks.core.errors import InputError, unknown_name

if TYPE_CHECKING:
    from prefect.task_runners import TaskRunner

RUNNERS = {"threads": "stage shards in threads of the flow's process (default)",
           "dask": "stage shards on Dask workers: a local cluster, or the scheduler at RPBENCH_DASK_ADDRESS"}
DEFAULT_DASK_WORKERS = 2


def chosen_runner() -> str:
    """The runner the environment asks for; an unknown name is an input error listing the runners."""
    name = os.environ.get("RPBENCH_RUNNER", "").strip() or "threads"
    if name not in RUNNERS:
        raise unknown_name("runner (RPBENCH_RUNNER)", name, RUNNERS)
    return name


def check_dask_address(address: str) -> str:
    """A scheduler address that is well formed and answers (a TCP connection within a few seconds); one line
    otherwise, before any flow starts (Dask's own client would wait 30 s and end in a traceback)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if parts.scheme not in ("tcp", "tls") or not host or not port:
        raise InputError(f"--dask-address {address}: expected tcp://HOST:PORT (a running `dask scheduler`)")
    try:
        socket.create_connection((host, port), timeout=3.0).close()
    except OSError as exc:
        raise InputError(f"--dask-address {address}: no scheduler answers there ({exc.strerror or exc}); start "
                         "one (dask scheduler) or leave the option out for a local cluster per run") from None
    return address


def dask_workers() -> int:
    raw = os.environ.get("RPBENCH_DASK_WORKERS", "").strip()
    if not raw:
        return DEFAULT_DASK_WORKERS
    if not raw.isdigit() or int(raw) < 1:
        raise InputError(f"RPBENCH_DASK_WORKERS: expected a whole number of worker processes >= 1, got {raw!r}")
    return int(raw)


def dask_runner(threads_per_worker: int) -> TaskRunner[Any]:
    """prefect-dask's runner: the scheduler at RPBENCH_DASK_ADDRESS, or a local cluster of worker processes."""
    # Dask's own INFO lines (every nanny and worker starting and closing) would bury the run's progress; set
    # before dask is imported, and inherited by its worker processes.
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise InputError("runner 'dask' needs prefect-dask: pip install 'rpbench[scale]'") from None
    address = os.environ.get("RPBENCH_DASK_ADDRESS", "").strip()
    if address:
        return DaskTaskRunner(address=check_dask_address(address))
    # Processes, not threads: what a second process buys is CPU (parsing, scoring, retrieval) beside the
    # flow's own; the LLM calls are I/O and overlap within each worker's event loop anyway.
    return DaskTaskRunner(cluster_kwargs={"n_workers": dask_workers(), "processes": True,
                                          "threads_per_worker": threads_per_worker,
                                          "dashboard_address": None})


def stage_runner(workers: int) -> TaskRunner[Any]:
    """A flow's task runner: ``workers`` threads, or Dask workers with as many threads between them."""
    from prefect.task_runners import ThreadPoolTaskRunner  # checking the choice needs no Prefect; this does

    if chosen_runner() == "dask":
        return dask_runner(threads_per_worker=max(1, workers // dask_workers()))
    return ThreadPoolTaskRunner(max_workers=workers)


def with_chosen_runner(flow_fn: Any, workers: int = 4) -> Any:
    """``flow_fn`` to run on the runner the environment asks for (a flow object is made at import time, and
    the command line chooses its runner later)."""
    if chosen_runner() == "threads":
        return flow_fn
    return flow_fn.with_options(task_runner=stage_runner(workers))
