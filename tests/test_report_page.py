"""The HTML report as a reader meets it: headings that name their unit, a compact leaderboard with every
column on demand, sorting by a click, each chart beside its table, one colour per model in every chart, and
values a chart cannot draw named in words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rpbench.tasks.reports.colours import PALETTE, model_colours
from rpbench.tasks.reports.report import build_report
from rpbench.tasks.reports.spec import Column, GroupKey, MetricSpec, ReportSpec, Scoring
from tests.helpers import headless_chromium

ROOT = Path(__file__).resolve().parent.parent
SPEC = ReportSpec(
    title="quiz",
    scoring=Scoring(metrics=(MetricSpec("accuracy", "share right", "correct", unit="%"),
                             MetricSpec("seconds", "time", "seconds", higher_is_better=False, digits=2, unit="s")),
                    groups=(GroupKey("topic", "topic"),)),
    extra_columns=(Column("share", "first-slot wins", 1, unit="%", scale=100),),
)


def _rows() -> list[dict]:
    # "late" has no history items: its bar there is not drawn and the caption says so.
    topics = {"early": ("science", "history"), "mid": ("science", "history"), "late": ("science",)}
    right = {"early": 0.9, "mid": 0.5, "late": 0.2}
    rows = []
    for model, ts in topics.items():
        for i in range(20):
            rows.append({"model": model, "topic": ts[i % len(ts)], "correct": 100.0 * (i < 20 * right[model]),
                         "seconds": 1.0 + i / 10})
    return rows


def _fill(data):
    for row in data.board:
        row["share"] = {"early": 0.25, "mid": 0.5, "late": 0.75}[row["model"]]
    from rpbench.tasks.reports.spec import Analysis

    return Analysis()


def _report():
    spec = ReportSpec(SPEC.title, SPEC.scoring, SPEC.extra_columns, analyze=_fill)
    return build_report(spec, "60 items.", _rows(), [], 50, 0)


def test_colours_follow_the_name_and_never_repeat_within_a_report():
    names = [f"model-{k}" for k in range(12)]
    together = model_colours(names)
    assert len(set(together.values())) == 12 and set(together.values()) <= set(PALETTE)
    assert model_colours(reversed(names)) == together  # the order a run lists them in changes nothing
    alone = {n: model_colours([n])[n] for n in names}
    # A model keeps its own colour wherever it appears, unless another model of the report took it first.
    kept = [n for n in names if together[n] == alone[n]]
    assert len(kept) >= 6


def test_the_page_names_units_keeps_the_leaderboard_compact_and_charts_beside_it():
    report = _report()
    html = report.html
    assert "<th>accuracy (%)</th>" in html and '<th class="more">first-slot wins (%)</th>' in html
    assert '<th class="more">seconds (s)</th>' in html and "<th>failed (items)</th>" in html
    # A stored share of 0.25 is shown as 25.0 in a column headed in %.
    assert re.search(r'<td class="num more" data-v="25\.0">25\.0</td>', html)
    # The breakdown chart sits in the leaderboard's block, and names what it cannot draw.
    board_block = html.split("<h2>Leaderboard</h2>", 1)[1].split("<h2>", 1)[0]
    assert 'class="board"' in board_block and board_block.count("data:image/png;base64,") == 1
    assert "Not drawn, no items: late on history." in board_block
    colours = model_colours(["early", "mid", "late"])
    assert all(f"background:{colours[m]}" in board_block for m in colours)
    assert "n/a" not in report.markdown


@pytest.mark.timeout(120)
def test_a_reader_sorts_the_leaderboard_and_shows_every_column(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(_report().html, encoding="utf-8")
    browser = headless_chromium()
    try:
        browser.get(page.as_uri())
        models = "return [...document.querySelectorAll('table.board tbody tr')].map(r => r.cells[0].textContent.trim())"
        assert browser.execute_script(models) == ["early", "mid", "late"]  # ranked by the headline
        visible = "return [...document.querySelectorAll('table.board th')].filter(t => t.offsetParent).length"
        compact = browser.execute_script(visible)
        heading = "[...document.querySelectorAll('table.board th')].find(t => t.textContent === arguments[0])"
        browser.execute_script(f"{heading}.click()", "seconds (s)")  # hidden, but sortable once shown
        browser.execute_script("document.querySelector('button.all-columns').click()")
        assert browser.execute_script(visible) == compact + 3  # a topic, seconds and the share
        browser.execute_script(f"{heading}.click()", "accuracy (%)")
        assert browser.execute_script(models) == ["early", "mid", "late"]  # descending first
        browser.execute_script(f"{heading}.click()", "accuracy (%)")
        assert browser.execute_script(models) == ["late", "mid", "early"]
        browser.execute_script(f"{heading}.click()", "model")
        assert browser.execute_script(models) == ["mid", "late", "early"]  # text: z to a first
        shot = ROOT / ".test-output" / "report-leaderboard.png"
        shot.parent.mkdir(exist_ok=True)
        browser.save_screenshot(str(shot))
    finally:
        browser.quit()


def test_declared_breakdown_values_with_no_scores_stay_in_the_table_file_but_not_in_the_report():
    """A declared order keeps the leaderboard table's columns put from run to run; the report shows only the
    values this run scored (CharacterBench declares thirteen dimensions, and a run may have two)."""
    declared = Scoring(metrics=SPEC.scoring.metrics,
                       groups=(GroupKey("topic", "topic", order=("science", "art", "history")),))
    report = build_report(ReportSpec("quiz", declared), "60 items.", _rows(), [], 50, 0)
    assert all("art" in row and row["art"] is None for row in report.board)  # the table keeps the column
    header = next(line for line in report.markdown.splitlines() if line.startswith("| model |"))
    assert "| science |" in header and "| history |" in header and "art" not in header
    assert "on art" not in report.html  # nor does the chart list it as not drawn for every model
