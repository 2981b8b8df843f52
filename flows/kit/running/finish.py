"""The end of a run: its outputs published together, the call accounting merged, the outcome judged, the
manifest written last and a summary in the UI; a run a budget stopped still says what it spent."""


from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rpbench.flows.kit.front.registry import models_config, models_file_digest
from rpbench.flows.kit.front.settings import RunSettings
from rpbench.flows.kit.running.notes import judge_notes, role_settings
from rpbench.flows.kit.running.outcome import judge_run
from rpbench.flows.kit.running.plan import planned_for
from rpbench.flows.kit.running.stage import final_folder, slug
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.running.ui import publish_markdown_now
from rpbench.flows.kit.scale.runners import chosen_runner
from rpbench.storage.runs import RunDir
from rpbench.storage.schemas import CALLS
from rpbench.storage.tables import read_records, write_records
from rpbench.tasks.core.errors import InputError, ModelUnusable, RunFailed
from rpbench.tasks.core.records import CallRecord
from rpbench.tasks.llm.budget import BudgetReached
from rpbench.tasks.llm.ledger import summarize_calls
from rpbench.tasks.reports.summary import run_summary_markdown


def publish_outputs(out: str | Path) -> dict[str, str]:
    """Move a finished run's final files into its folder, together, and return where each went.

    Stages made them under ``stages/_final/``; until now the run folder still held the previous run's
    outputs, whole. Each file is hard-linked in by an atomic rename (the staged copy stays, so the
    stages' cached results stay valid), which takes milliseconds for the whole set.
    """
    staged, root = final_folder(out), Path(out)
    moved: dict[str, str] = {}
    if not staged.is_dir():
        return moved
    # Files in folders (a RoleBench layout, say) keep their place below the run folder.
    # A name starting with a dot is work in progress (a temporary file or folder a killed writer left).
    for path in sorted(p for p in staged.rglob("*")
                       if p.is_file() and not any(part.startswith(".") for part in p.relative_to(staged).parts)):
        target = root / path.relative_to(staged)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{path.name}.publish")
        tmp.unlink(missing_ok=True)
        try:
            os.link(path, tmp)
        except OSError:  # a file system without hard links
            shutil.copy2(path, tmp)
        os.replace(tmp, target)
        moved[str(path)] = str(target)
    return moved


def _published(value: Any, moved: Mapping[str, str]) -> Any:
    """``value`` with every staged path in it replaced by where the file was published."""
    if isinstance(value, str):
        return moved.get(value, value)
    if isinstance(value, dict):
        return {k: _published(v, moved) for k, v in value.items()}
    if isinstance(value, list):
        return [_published(v, moved) for v in value]
    return value


def finish_run(out: str, stages: Stages, settings: RunSettings, flow: str,
               inherited: Sequence[CallRecord] = (), failed_parts: Sequence[str] = (), **sections: Any) -> Any:
    """Publish the run's outputs, merge the stages' call accounting into ``calls.parquet``, judge the
    outcome, write the manifest (last), publish a summary. Returns the manifest, or, when the run failed by
    ``settings.max_failure_share``, Prefect's Failed state carrying a ``RunFailed`` (the flow returns it:
    the run is Failed in Prefect, and the caller gets the exception).

    ``totals`` account for every call behind the run's tables: the stages' own, and ``inherited`` ones (the
    calls of an earlier run whose tables this run carries forward, as a rejudge carries the conversations);
    ``this_run`` says what this run did itself (a rerun of a finished flow finds every stage cached and sends
    nothing). ``failed_parts``: reasons the run failed beyond its own stages (a suite's mode that failed).
    """
    moved = publish_outputs(out)
    sections = _published(sections, moved)
    models_file = settings.models_file
    run = RunDir(Path(out), started=stages.started)
    calls: list[CallRecord] = list(inherited)
    fresh: list[CallRecord] = []
    for result, cached in zip(stages.results, stages.cached, strict=True):
        if result.calls:
            # A stage's calls in the order of what was asked, not of when each reply came (which concurrency
            # decides): the same run twice writes the same table.
            written = read_records(result.calls, CALLS)
            if not cached:
                fresh += written[result.carried:]  # not the calls a stopped earlier attempt sent
            records = sorted(written, key=lambda r: (r.tag or "", r.cache_key, r.attempt))
            known = {c.call_id for c in calls}  # a cached stage's calls may be among the inherited ones
            calls += [r for r in records if r.call_id not in known]
    write_records(run.root / CALLS.filename, calls, CALLS)
    totals = summarize_calls(calls)
    templates = {k: v for r in stages.results for k, v in r.templates.items()}
    release_files = {k: v for r in stages.results for k, v in r.release_files.items()}
    stage_calls = {f"{r.stage}[{r.shard}]" if r.shard else r.stage: r.calls for r in stages.results if r.calls}
    outcome = judge_run(run.root, stage_calls, settings.max_failure_share)
    if failed_parts:
        outcome = {**outcome, "status": "failed", "reasons": [*failed_parts, *outcome["reasons"]]}
    config = models_config(models_file)
    spent = summarize_calls(fresh)
    planned = planned_for(settings, out)  # a plan of this very command (--plan), kept in the folder: shown beside
    judging_self, left_embedded = judge_notes(settings, config)
    manifest = run.write_manifest(
        outcome=outcome,
        self_judging=judging_self,
        embedded_roles=left_embedded,
        flow=flow,
        config=config.redacted(),
        models_file=models_file,
        models_file_sha256=models_file_digest(models_file),
        models=totals.pop("models"),
        prompt_templates=dict(sorted(templates.items())),
        # The words of the benchmarks' own code a run sent, each file as read: repository@commit/path -> sha256.
        release_files=dict(sorted(release_files.items())),
        role_settings=role_settings(config, {c.role for c in calls}),
        totals=totals,
        this_run={**stages.report(), "calls_sent": spent["calls_sent"], "cost_usd": spent["cost_usd"],
                  "cost_unknown_calls": spent["cost_unknown_calls"], "prompt_tokens": spent["prompt_tokens"],
                  "reply_tokens": spent["completion_tokens"], "runner": chosen_runner()},
        plan=planned["total"] if planned else None,  # replaces an earlier command's plan in a shared folder
        **sections,
    )
    publish_markdown_now(f"run-summary-{slug(flow)}", run_summary_markdown(manifest, out), "rpbench run summary")
    if outcome["status"] == "failed":
        return failed_state(RunFailed(out, outcome["reasons"], outcome["failures"]))
    return manifest


def stopped_by_budget(settings: Any, flow: str, error: BudgetReached) -> None:
    """A run the budget stopped still says what it spent: its manifest (outcome stopped, the budget, the spend,
    what is left) and a run summary; every answered call is in the call cache and the stage journals, so the
    same command with a larger budget continues."""
    out = getattr(settings, "out", None)
    if not out or not isinstance(settings, RunSettings):
        return
    config = models_config(settings.models_file)
    run = RunDir(Path(out))
    manifest = run.write_manifest(
        outcome={"status": "stopped", "reasons": [str(error)], "failures": {}},
        budget={"budget_usd": error.budget, "spent_usd": round(error.spent, 6),
                "left_usd": round(error.budget - error.spent, 6), "scope": error.scope},
        flow=flow, config=config.redacted(), models_file=settings.models_file,
        settings=settings.recorded(out))
    publish_markdown_now(f"run-summary-{slug(flow)}", run_summary_markdown(manifest, str(out)),
                         "rpbench run summary")


def failed_state(error: RunFailed | ModelUnusable | InputError) -> Any:
    """Prefect's Failed state for a run that failed by its rule, or stopped on a model it cannot use or on bad
    input: the UI shows the reasons, no traceback; whoever called the flow gets ``error`` raised."""
    from prefect.states import Failed

    return Failed(message=str(error), data=error)
