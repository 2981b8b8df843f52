"""Options and helpers shared by the ``rpbench`` commands."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from rpbench.flows.kit.environment import quiet_prefect_exit
from rpbench.tasks.llm.event_loop import run_coroutine

ModelsOpt = Annotated[
    Path | None,
    typer.Option(
        "--models",
        help="Models config (TOML or YAML) binding roles (judge, source, base, ...) to model strings. "
        "Default: every role uses the embedded local model. Env overrides: RPBENCH_<ROLE>_<FIELD>.",
    ),
]
CacheOpt = Annotated[
    Path | None,
    typer.Option("--cache", help="SQLite call cache; a rerun repeats no call found here. Default: .rpbench/calls.sqlite"),
]


def opt(path: Path | None) -> str | None:
    return str(path) if path is not None else None


def run_flow(flow_fn: Any, **params: Any) -> Any:
    """Run a flow (sync or async) and shut Prefect down cleanly afterwards."""
    with quiet_prefect_exit():
        result = flow_fn(**params)
        if asyncio.iscoroutine(result):
            result = run_coroutine(result)
    return result
