"""Running a flow's stages and finishing its run: the manifest, call accounting and a summary in the UI."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prefect import Task
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from rpbench.flows.kit.environment import quiet_prefect_exit
from rpbench.flows.kit.stage import StageResult, slug
from rpbench.flows.kit.ui import publish_markdown_now
from rpbench.storage.runs import RunDir
from rpbench.storage.schemas import CALLS
from rpbench.storage.tables import read_records, write_records
from rpbench.tasks.core.records import CallRecord
from rpbench.tasks.llm import load_models_config
from rpbench.tasks.llm.event_loop import run_coroutine
from rpbench.tasks.llm.ledger import summarize_calls
from rpbench.tasks.reports.summary import run_summary_markdown


def thread_runner(workers: int) -> TaskRunner[Any]:
    """A flow's task runner: shards in up to ``workers`` threads (the gateway bounds the LLM calls anyway)."""
    return ThreadPoolTaskRunner(max_workers=workers)


class Stages:
    """The stage tasks one flow run ran: their results, and which of them Prefect took from its cache."""

    def __init__(self) -> None:
        self.started = time.time()  # the run's wall time counts from here
        self.results: list[StageResult] = []
        self.cached: list[bool] = []

    def map(self, stage: Task[..., Any], shards: Sequence[Mapping[str, Any]]) -> list[StageResult]:
        """One call of ``stage`` per shard, submitted together so the flow's task runner can spread them.

        A cached result whose tables are gone (a deleted folder) is run again, never trusted.
        """
        futures = [stage.submit(**shard) for shard in shards]
        results: list[StageResult] = [f.result() for f in futures]
        cached = [f.state.name == "Cached" for f in futures]
        stale = [i for i, r in enumerate(results) if r.missing()]
        if stale:
            again = stage.with_options(refresh_cache=True)
            redone = {i: again.submit(**shards[i]) for i in stale}
            for i, future in redone.items():
                results[i], cached[i] = future.result(), False
        self.results += results
        self.cached += cached
        return results

    def run(self, stage: Task[..., Any], **params: Any) -> StageResult:
        return self.map(stage, [params])[0]

    def report(self) -> dict[str, Any]:
        return {"stages": len(self.results), "cached": sum(self.cached),
                "seconds": round(time.time() - self.started, 1),
                "run": [f"{r.stage}[{r.shard}]" if r.shard else r.stage
                        for r, c in zip(self.results, self.cached, strict=True) if not c]}


def finish_run(out: str, stages: Stages, models_file: str | None, flow: str, **sections: Any) -> dict[str, Any]:
    """Merge the stages' call accounting into ``calls.parquet``, write the manifest, publish a summary.

    ``totals`` account for every call behind the run's tables; ``this_run`` says what this run did itself
    (a rerun of a finished flow finds every stage cached and sends nothing).
    """
    run = RunDir(Path(out), started=stages.started)
    calls: list[CallRecord] = []
    fresh: list[CallRecord] = []
    for result, cached in zip(stages.results, stages.cached, strict=True):
        if result.calls:
            records = read_records(result.calls, CALLS)
            calls += records
            if not cached:
                fresh += records
    write_records(run.root / CALLS.filename, calls, CALLS)
    totals = summarize_calls(calls)
    templates = {k: v for r in stages.results for k, v in r.templates.items()}
    manifest = run.write_manifest(
        flow=flow,
        config=load_models_config(models_file).redacted(),
        models_file=models_file,
        models=totals.pop("models"),
        prompt_templates=dict(sorted(templates.items())),
        totals=totals,
        this_run={**stages.report(), "calls_sent": summarize_calls(fresh)["calls_sent"]},
        **sections,
    )
    publish_markdown_now(f"run-summary-{slug(flow)}", run_summary_markdown(manifest, out), "rpbench run summary")
    return manifest


def run_flow(flow_fn: Any, **params: Any) -> Any:
    """Run a flow (sync or async) and shut Prefect down cleanly afterwards."""
    with quiet_prefect_exit():
        result = flow_fn(**params)
        if asyncio.iscoroutine(result):
            result = run_coroutine(result)
    return result
