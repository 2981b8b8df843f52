"""Score any mode's item-level rows and write its leaderboard and report, from its metric specs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rpbench.storage.tables import atomic_write_bytes, write_table
from rpbench.tasks.core.records import Failure, failed_pairs
from rpbench.tasks.reports.colours import model_colours
from rpbench.tasks.reports.page import Block, html_page, leaderboard_html, markdown_html, section_block
from rpbench.tasks.reports.render import (
    breakdown_charts,
    breakdown_markdown,
    failures_markdown,
    leaderboard_columns,
    markdown_report,
    metrics_markdown,
)
from rpbench.tasks.reports.scores import leaderboard, model_scores
from rpbench.tasks.reports.spec import Analysis, AnalysisInput, ReportSpec, Section
from rpbench.tasks.reports.tables import columns_metadata, items_metadata, leaderboard_table, model_scores_table


@dataclass
class Report:
    scores: list[dict[str, Any]]
    board: list[dict[str, Any]]
    markdown: str
    html: str
    analysis: Analysis
    files: dict[str, str]
    # Per model, the items it was asked: those its score stands on (n) and the failed ones not among them (a
    # mode that scores a failed answer as 0, as FURINA does, has them in n already). The failure rule's base.
    items: dict[str, int] = field(default_factory=dict)


def failure_counts(failures: Sequence[Failure]) -> dict[str, dict[str, int]]:
    """Model -> kind of failure -> how many."""
    out: dict[str, Counter[str]] = {}
    for f in failures:
        out.setdefault(f.model, Counter())[f.kind] += 1
    return {model: dict(kinds) for model, kinds in out.items()}


def build_report(spec: ReportSpec, intro: str, records: Sequence[Any], failures: Sequence[Failure],
                 resamples: int, seed: int, context: dict[str, Any] | None = None,
                 systems: Sequence[str] = (), sections: Sequence[Section] = ()) -> Report:
    """Model scores with intervals, the ranked leaderboard (with the mode's own columns), Markdown and HTML.
    ``systems``: every system the run scored, on the leaderboard even when none of its items has a score (a
    model whose every call failed: no score, and its failures counted). ``sections``: the kit's, after the
    mode's own."""
    rows = [r.model_dump() if hasattr(r, "model_dump") else dict(r) for r in records]
    scores = model_scores(rows, spec.scoring, resamples, seed)
    failed = failed_pairs(failures)
    failed_items = Counter(model for model, _ in failed)
    board = leaderboard(scores, spec.scoring, failed_items,
                        sorted({str(r[spec.scoring.model_column]) for r in rows} | set(systems)))
    colours = model_colours(str(r["model"]) for r in board)
    analysis = (spec.analyze(AnalysisInput(board, list(records), scores, resamples, seed, dict(context or {}),
                                           colours)) if spec.analyze is not None else Analysis())
    analysis.sections += sections
    columns = leaderboard_columns(spec.scoring, scores, spec.extra_columns)
    by_kind = failure_counts(failures)
    asked = items_asked(board, rows, failed, spec)
    for r in board:  # the failed items' share of those the model was asked
        r["failed_share"] = r["failed"] / asked[str(r["model"])] if asked.get(str(r["model"])) else None
    breakdowns = breakdown_markdown(board, spec.scoring, scores)
    markdown = markdown_report(spec.title, intro, board, columns, spec.scoring, analysis.sections, by_kind,
                               breakdowns)
    charts = breakdown_charts(board, spec.scoring, scores, colours)
    per_group = [Block(f"{spec.scoring.headline.name} per group, with intervals", markdown_html(breakdowns))
                 ] if breakdowns else []
    blocks = [Block("Leaderboard", leaderboard_html(board, columns, colours), list(charts.values())), *per_group,
              *(section_block(s) for s in analysis.sections),
              Block("Failures", markdown_html(failures_markdown(by_kind))),
              Block("Metrics", markdown_html(metrics_markdown(spec.scoring)))]
    return Report(scores, board, markdown, html_page(spec.title, intro, blocks), analysis, {}, asked)


def items_asked(board: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], failed: set[tuple[str, str]],
                spec: ReportSpec) -> dict[str, int]:
    """Per model on ``board``: its n, plus its failed items that n does not count already."""
    scoring = spec.scoring
    counted = {(str(r[scoring.model_column]), str(r[scoring.item_column])) for r in rows
               if scoring.item_column and r.get(scoring.headline.column) is not None}
    extra = Counter(model for model, _ in failed - counted)
    return {str(b["model"]): int(b["n"]) + extra.get(str(b["model"]), 0) for b in board}


def write_report(report: Report, out: str | Path, spec: ReportSpec) -> Report:
    """model_scores.parquet, leaderboard.parquet, report.md and report.html under ``out``."""
    out = Path(out)
    scoring = spec.scoring
    columns = leaderboard_columns(scoring, report.scores, spec.extra_columns)
    keep = {"model", "ci_low", "ci_high", "n", *(c.key for c in columns)}
    board = [{k: v for k, v in r.items() if k in keep} for r in report.board]
    report.files = {
        "model_scores": str(write_table(out / "model_scores.parquet", report.scores, model_scores_table(scoring))),
        "leaderboard": str(write_table(out / "leaderboard.parquet", board, leaderboard_table(columns),
                                       {**columns_metadata(columns), **items_metadata(report.items)})),
    }
    atomic_write_bytes(out / "report.md", report.markdown.encode("utf-8"))
    atomic_write_bytes(out / "report.html", report.html.encode("utf-8"))
    report.files |= {"report_md": str(out / "report.md"), "report_html": str(out / "report.html")}
    return report
