"""The shared end of an evaluation: model scores, the leaderboard and the report of any mode, as a stage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rpbench.flows.kit.registry import BenchmarkMode, get_mode
from rpbench.flows.kit.stage import StageResult, StageRun, stage
from rpbench.flows.kit.ui import publish_markdown, publish_table
from rpbench.storage.schemas import FAILURES
from rpbench.storage.tables import read_records
from rpbench.tasks.core.records import Failure
from rpbench.tasks.reports.report import Report, build_report, write_report


async def publish_report(run: StageRun, mode: BenchmarkMode, rows: Sequence[Any], failures: Sequence[Failure],
                         n_items: int, resamples: int, seed: int) -> Report:
    """Score ``rows`` (records of the mode's item table), write the report files, publish them in the UI."""
    report = write_report(
        build_report(f"rpbench {mode.name} evaluation", f"{n_items} benchmark items.", mode.scoring, rows, failures,
                     resamples, seed, mode.extra_columns, mode.analyze),
        run.out, mode.scoring, mode.extra_columns)
    run.tables.update(report.files)
    await publish_table(f"{mode.name}-leaderboard", report.board, f"rpbench {mode.name} leaderboard")
    await publish_markdown(f"{mode.name}-report", report.markdown, f"rpbench {mode.name} evaluation report")
    return report


@stage("report", inputs=("items", "failures"))
async def report_stage(run: StageRun, mode: str, items: list[str], failures: list[str], n_items: int,
                       resamples: int, seed: int, out: str) -> StageResult:
    """Any registered mode's report from its item tables (one per model, say) and failure tables."""
    found = get_mode(mode)
    rows = [r for p in items for r in read_records(p, found.item_table)]
    failed = [f for p in failures for f in read_records(p, FAILURES)]
    run.write(found.item_table, rows, final=True)
    report = await publish_report(run, found, rows, failed, n_items, resamples, seed)
    return run.result(leaderboard=report.board, **report.analysis.summary)
