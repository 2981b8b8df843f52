"""The demo flow: a short end-to-end run on the embedded local model.

For now: characters answer a line, a judge scores each answer, and the run's
tables and manifest are written under ``out``. Later issues grow it into the
whole pipeline (pool, characters, build, evaluation).
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from tasks.demo_tasks import demo_replies
from tasks.run_tasks import finish_run, publish_run_summary

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@flow(name="rpbench-demo", log_prints=True)
async def demo(out: str = "runs/demo", models: str | None = None, cache: str | None = None) -> dict:
    table = await demo_replies(out, str(SAMPLES / "demo_lines.yaml"), models, cache)
    manifest = finish_run(out, models, cache, demo={"table": table})
    publish_run_summary(out, "rpbench-demo")
    return manifest


if __name__ == "__main__":
    import asyncio

    asyncio.run(demo())
