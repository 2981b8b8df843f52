"""The end of a run: its outputs published together, the call accounting merged, the outcome judged, the
manifest written last and a summary in the UI; a run a budget stopped still says what it spent."""


from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rpbench.flows.kit.front.registry import models_file_digest, run_models
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
from rpbench.tasks.reports.summary import run_summary_markdown, stopped_report_markdown


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
    run = RunDir(Path(out), started=stages.started)
    calls, fresh = _run_calls(stages, inherited)
    write_records(run.root / CALLS.filename, calls, CALLS)
    stage_calls = {f"{r.stage}[{r.shard}]" if r.shard else r.stage: r.calls for r in stages.results if r.calls}
    outcome = judge_run(run.root, stage_calls, settings.max_failure_share)
    if failed_parts:
        outcome = {**outcome, "status": "failed", "reasons": [*failed_parts, *outcome["reasons"]]}
    planned = planned_for(settings, out)  # a plan of this very command (--plan), kept in the folder: shown beside
    manifest = _write_manifest(run, settings, stages, flow, outcome, calls, fresh,
                               plan=planned["total"] if planned else None,  # replaces an earlier command's plan
                               **sections)
    publish_markdown_now(f"run-summary-{slug(flow)}", run_summary_markdown(manifest, out), "rpbench run summary")
    if outcome["status"] == "failed":
        return failed_state(RunFailed(out, outcome["reasons"], outcome["failures"]))
    return manifest


def _run_calls(stages: Stages, inherited: Sequence[CallRecord] = (), stopped_in: Path | None = None
               ) -> tuple[list[CallRecord], list[CallRecord]]:
    """Every call behind the run (the stages' own and ``inherited``), and those this run sent itself. A stopped
    run adds the calls of the stages it stopped in, from their journals (a stage that finished has none left)."""
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
    if stopped_in is not None:  # the run folder of a stopped run
        from rpbench.tasks.llm.ledger import read_journal

        known = {c.call_id for c in calls}
        for journal in sorted((stopped_in / "calls").glob("*.journal.jsonl")):
            records = [r for r in read_journal(journal) if r.call_id not in known]
            calls += sorted(records, key=lambda r: (r.tag or "", r.cache_key, r.attempt))
            fresh += [r for r in records if not r.cached]
    return calls, fresh


def _write_manifest(run: RunDir, s: RunSettings, stages: Stages, flow: str, outcome: Mapping[str, Any],
                    calls: Sequence[CallRecord], fresh: Sequence[CallRecord],
                    reads: Mapping[str, Mapping[str, str]] | None = None, **sections: Any) -> dict[str, Any]:
    """The manifest a run writes, finished or stopped: the same sections either way (``reads``: templates and
    release files of a stage that stopped, beside the finished stages')."""
    totals = summarize_calls(calls)
    templates = {k: v for r in stages.results for k, v in r.templates.items()}
    release_files = {k: v for r in stages.results for k, v in r.release_files.items()}
    templates.update((reads or {}).get("templates", {}))
    release_files.update((reads or {}).get("release_files", {}))
    config = run_models(s.models_file)
    spent = summarize_calls(list(fresh))
    judging_self, left_embedded = judge_notes(s, config)
    return run.write_manifest(
        outcome=dict(outcome),
        self_judging=judging_self,
        embedded_roles=left_embedded,
        flow=flow,
        config=config.redacted(),
        models_file=s.models_file,
        models_file_sha256=models_file_digest(s.models_file),
        models=totals.pop("models"),
        prompt_templates=dict(sorted(templates.items())),
        # The words of the benchmarks' own code a run sent, each file as read: repository@commit/path -> sha256.
        release_files=dict(sorted(release_files.items())),
        role_settings=role_settings(config, {c.role for c in calls}),
        totals=totals,
        this_run={**stages.report(), "calls_sent": spent["calls_sent"], "cost_usd": spent["cost_usd"],
                  "cost_unknown_calls": spent["cost_unknown_calls"], "prompt_tokens": spent["prompt_tokens"],
                  "reply_tokens": spent["completion_tokens"], "runner": chosen_runner()},
        **sections,
    )


def stopped_run(settings: Any, flow: str, stages: Stages | None, error: BaseException) -> bool:
    """A run stopped before its end (its budget reached, Ctrl-C, a model it cannot use) still writes the manifest
    a finished run writes: its totals counting what was answered (the finished stages' calls and the journals of
    those it stopped in), this run's part, the release files and templates read, every role's settings, and its
    outcome (stopped, and by what: the budget, a model, a signal), with the budget's spend where that stopped it.
    Every answered call is in the call cache, so the same command continues. False: no run folder to write."""
    from rpbench.tasks.llm.run_context import current_run

    out = getattr(settings, "out", None)
    if not out or not isinstance(settings, RunSettings) or stages is None or current_run().plan is not None:
        return False  # (a plan's run, in a scratch folder, writes nothing)
    # "stopped", whatever stopped it: it did not reach its end (a failed run did, and lost too much on the way).
    by = "budget" if isinstance(error, BudgetReached) else "model" if isinstance(error, ModelUnusable) else "signal"
    reason = str(error) or "interrupted by a signal (Ctrl-C)"
    extra: dict[str, Any] = {"settings": settings.recorded(out)}
    if isinstance(error, BudgetReached):
        extra["budget"] = {"budget_usd": error.budget, "spent_usd": round(error.spent, 6),
                           "left_usd": round(error.budget - error.spent, 6), "scope": error.scope}
    calls, fresh = _run_calls(stages, stopped_in=Path(out))
    run = RunDir(Path(out), started=stages.started)
    # Its calls table beside it, as a finished run's: the manifest's totals are what calls.parquet holds (the
    # tables and report stay the last finished run's until this one finishes).
    write_records(run.root / CALLS.filename, calls, CALLS)
    manifest = _write_manifest(run, settings, stages, flow,
                               {"status": "stopped", "stopped_by": by, "reasons": [reason], "failures": {}},
                               calls, fresh, getattr(error, "stage_reads", None), **extra)
    _write_stopped_report(run.root, manifest, str(out))
    publish_markdown_now(f"run-summary-{slug(flow)}", run_summary_markdown(manifest, str(out)),
                         "rpbench run summary")
    return True


def _write_stopped_report(folder: Path, manifest: dict[str, Any], out: str) -> None:
    """report.md and report.html say what the manifest says: the run stopped, why, what it answered and spent
    (not an earlier finished run's scores, which would read as this run's)."""
    from rpbench.storage.tables import atomic_write_bytes
    from rpbench.tasks.reports.page import html_page

    markdown = stopped_report_markdown(manifest, out)
    atomic_write_bytes(folder / "report.md", markdown.encode())
    atomic_write_bytes(folder / "report.html", html_page(f"rpbench run {out}: stopped", markdown, []).encode())


def stopped_by_budget(settings: Any, flow: str, error: BudgetReached, stages: Stages | None = None) -> None:
    """A run the budget stopped still says what it spent (``stopped_run``); a flow that keeps no ``Stages`` says
    at least its outcome and the budget's spend."""
    if stopped_run(settings, flow, stages, error):
        return
    out = getattr(settings, "out", None)
    if not out or not isinstance(settings, RunSettings):
        return
    config = run_models(settings.models_file)
    manifest = RunDir(Path(out)).write_manifest(
        outcome={"status": "stopped", "reasons": [str(error)], "failures": {}},
        budget={"budget_usd": error.budget, "spent_usd": round(error.spent, 6),
                "left_usd": round(error.budget - error.spent, 6), "scope": error.scope},
        flow=flow, config=config.redacted(), models_file=settings.models_file,
        settings=settings.recorded(out))
    _write_stopped_report(Path(out), manifest, str(out))
    publish_markdown_now(f"run-summary-{slug(flow)}", run_summary_markdown(manifest, str(out)),
                         "rpbench run summary")


def failed_state(error: RunFailed | ModelUnusable | InputError) -> Any:
    """Prefect's Failed state for a run that failed by its rule, or stopped on a model it cannot use or on bad
    input: the UI shows the reasons, no traceback; whoever called the flow gets ``error`` raised."""
    from prefect.states import Failed

    return Failed(message=str(error), data=error)
