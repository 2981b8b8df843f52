"""The shared end of an evaluation: model scores, the leaderboard and the report of any mode, as a stage."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rpbench.flows.kit.front.registry import get_mode, load_ref
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.ui import publish_markdown, publish_table
from rpbench.storage.schemas import FAILURES
from rpbench.storage.tables import read_records
from rpbench.tasks.core.records import Failure
from rpbench.tasks.reports.report import Report, build_report, write_report
from rpbench.tasks.reports.spec import ReportSpec, Scored
from rpbench.tasks.reports.viewer import VIEWER_FILE, Sample, write_viewer


async def publish_report(run: StageRun, name: str, spec: ReportSpec, rows: Sequence[Any],
                         failures: Sequence[Failure], n_items: int, resamples: int, seed: int,
                         context: dict[str, Any] | None = None, samples: Iterable[Sample] = (),
                         notes: Sequence[str] | None = None) -> Report:
    """Score ``rows`` (records of mode ``name``'s item table), write the report files and the sample viewer
    (``samples``: what every model said, as the mode shows it; they may be made as they are read), publish them
    in the UI."""
    intro = "".join(f"**Warning:** {line}.\n\n" for line in notes or ()) + f"{n_items} {spec.unit}."
    remaining = iter(samples)
    first = next(remaining, None)
    if first is not None:
        intro += (" Every sample, searchable, with what was asked and how it was judged: "
                  f"[{VIEWER_FILE}]({VIEWER_FILE}).")
    report = write_report(build_report(spec, intro, rows, failures, resamples, seed, context), run.final_folder,
                          spec)
    run.tables.update(report.files)
    if first is not None:
        viewer = write_viewer(run.final_folder, f"{spec.title}: samples", itertools.chain([first], remaining),
                              {"report": "report.html"})
        run.tables["viewer"] = str(viewer)
    await publish_table(f"{name}-leaderboard", report.board, f"{spec.title}: leaderboard")
    await publish_markdown(f"{name}-report", report.markdown, spec.title)
    return report


def _mode_modules(params: Mapping[str, Any]) -> list[str]:
    """The modules the named mode's report and item table come from (their code decides the report)."""
    found = get_mode(params["mode"])
    return [ref.partition(":")[0] for ref in (found.report, found.item_table) if isinstance(ref, str)]


@stage("report", inputs=("items", "failures"), code=_mode_modules)
async def report_stage(run: StageRun, mode: str, items: list[str], failures: list[str], n_items: int,
                       resamples: int, seed: int, notes: list[str] | None = None) -> StageResult:
    """Any registered mode's report from its item tables (one per model, say) and failure tables."""
    found = get_mode(mode)
    rows = [r for p in items for r in read_records(p, found.load_item_table())]
    failed = [f for p in failures for f in read_records(p, FAILURES)]
    run.write(found.load_item_table(), rows, final=True)
    report = await publish_report(run, found.name, found.load_report(), rows, failed, n_items, resamples, seed,
                                  notes=notes)
    return run.result(leaderboard=report.board, **report.analysis.summary)


def _hook_modules(params: Mapping[str, Any]) -> list[str]:
    """The scoring hook's module and the mode's report and item table modules: their code decides the report."""
    return [params["score"].partition(":")[0], *_mode_modules(params)]


@stage("report", inputs=("inputs",), code=_hook_modules)
async def scored_report(run: StageRun, mode: str, score: str, inputs: list[str], options: dict[str, Any],
                        resamples: int, seed: int, notes: list[str] | None = None) -> StageResult:
    """Any mode's report from its scoring hook: ``score`` ("module:function") turns ``options`` (its stage
    tables and settings; ``inputs``: every file it reads, whose content keys the cache) into a ``Scored``; the
    kit writes the item table, the failures and the mode's other tables final, scores, reports and publishes."""
    found = get_mode(mode)
    scored: Scored = load_ref(score)(**options)
    tables: list[tuple[Any, Sequence[Any]]] = [(found.load_item_table(), scored.rows), (FAILURES, scored.failures),
                                               *scored.finals]
    for spec, records in tables:
        run.write(spec, records, final=True)
    report = await publish_report(run, found.name, found.load_report(), scored.rows, scored.failures,
                                  scored.n_items, resamples, seed, scored.context, scored.samples, notes)
    return run.result(leaderboard=report.board, **report.analysis.summary)
