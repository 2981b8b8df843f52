"""Prefect tasks of the Foundation demo: thin wrappers over ``tasks.demo``."""

from __future__ import annotations

from prefect import task

from storage.schemas import DEMO_REPLIES
from storage.tables import write_table
from tasks.demo.replies import load_lines, run_demo
from tasks.progress import Progress
from tasks.runtime import get_runtime


@task(name="demo-replies-and-judgments")
async def demo_replies(run_dir: str, lines_path: str, models: str | None = None, cache: str | None = None) -> str:
    """Characters answer each line and the judge scores each answer; writes ``demo_replies.parquet``."""
    rt = get_runtime(run_dir, models, cache)
    lines = load_lines(lines_path)
    rows = await run_demo(rt.gateway, lines, progress=lambda name, total: Progress(f"demo {name}", total))
    return str(write_table(rt.run.table(DEMO_REPLIES), rows, DEMO_REPLIES))
