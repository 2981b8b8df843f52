"""Benchmark modes as plug-ins: a toy mode registered here, with two metrics, gets a leaderboard and a report
from the shared code; unknown mode names fail loudly."""

from __future__ import annotations

import asyncio
import math
import random

import pyarrow.parquet as pq
import pytest

from rpbench.flows.kit.registry import BenchmarkMode, get_mode, modes, register
from rpbench.flows.kit.report import report_stage
from rpbench.flows.kit.run import publish_outputs
from rpbench.storage.schemas import FAILURES, TableSpec
from rpbench.storage.tables import write_records
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import Failure, Record
from rpbench.tasks.reports.spec import GroupKey, MetricSpec, ReportSpec, Scoring


class QuizAnswer(Record):
    """The toy mode's item-level row: one answer of one model to one quiz question."""

    item_id: str
    model: str
    language: str
    correct: float
    seconds: float


TOY = BenchmarkMode(
    name="toy-quiz",
    description="A quiz: how often a model is right, and how long it takes.",
    roles={"quizzer": "answers the questions"},
    item_table=TableSpec("quiz_answers", 1, QuizAnswer),
    report=ReportSpec("rpbench toy-quiz evaluation", Scoring(
        metrics=(MetricSpec("accuracy", "share of questions answered right, in percent", "correct",
                            point=lambda v: 100 * sum(v) / len(v), statistic=lambda x, axis: 100 * x.mean(axis=axis)),
                 MetricSpec("seconds", "mean time to answer", "seconds", higher_is_better=False, interval=False,
                            digits=2)),
        groups=(GroupKey("language", "language"),),
    )),
)


def _rows() -> list[QuizAnswer]:
    rng = random.Random(0)
    skill = {"sharp": 0.9, "dull": 0.3}
    return [QuizAnswer(item_id=f"q{i}", model=m, language="en" if i % 3 else "zh",
                       correct=float(rng.random() < p), seconds=1.0 + rng.random() + (m == "dull"))
            for m, p in skill.items() for i in range(60)]


def test_a_toy_mode_gets_a_leaderboard_and_a_report_without_touching_shared_code(tmp_path):
    register(TOY)
    assert get_mode("toy-quiz") is TOY and "furina" in modes()
    write_records(tmp_path / "answers.parquet", _rows(), TOY.item_table)
    write_records(tmp_path / "failures.parquet",
                  [Failure(stage="answers", model="dull", item_id="q99", kind="answer_failed")], FAILURES)
    result = asyncio.run(report_stage.fn(mode="toy-quiz", items=[str(tmp_path / "answers.parquet")],
                                         failures=[str(tmp_path / "failures.parquet")], n_items=60,
                                         resamples=200, seed=0, out=str(tmp_path / "out")))
    publish_outputs(tmp_path / "out")  # what a flow's finish_run does once every stage has succeeded
    board = result.summary["leaderboard"]
    assert [r["model"] for r in board] == ["sharp", "dull"]  # ranked by the headline metric, accuracy
    sharp = board[0]
    truth = 100 * sum(r.correct for r in _rows() if r.model == "sharp") / 60
    assert sharp["accuracy"] == pytest.approx(truth) and sharp["ci_low"] < truth < sharp["ci_high"]
    assert sharp["n"] == 60 and {"en", "zh"} <= set(sharp) and board[1]["failed"] == 1
    assert sharp["seconds"] < board[1]["seconds"]  # the second metric is there too
    # Every metric, for every model and every language ('all' included), with its interval and item count.
    scores = pq.read_table(tmp_path / "out" / "model_scores.parquet").to_pylist()
    assert {(s["model"], s["metric"], s["language"]) for s in scores} == {
        (m, k, lang) for m in ("sharp", "dull") for k in ("accuracy", "seconds") for lang in ("en", "zh", "all")}
    assert all(s["ci_low"] == s["ci_high"] == s["score"] for s in scores if s["metric"] == "seconds")
    report = (tmp_path / "out" / "report.md").read_text()
    assert "# rpbench toy-quiz evaluation" in report and "| sharp |" in report
    assert "seconds (lower is better): mean time to answer" in report and "dull: answer_failed 1" in report
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<table>" in html and html.count("data:image/png;base64,") == 1  # one breakdown chart: language
    leaderboard = pq.read_table(tmp_path / "out" / "leaderboard.parquet").to_pylist()
    assert [r["model"] for r in leaderboard] == ["sharp", "dull"] and not math.isnan(leaderboard[0]["seconds"])


def test_lower_is_better_headline_ranks_ascending():
    from rpbench.tasks.reports.scores import leaderboard, model_scores

    scoring = Scoring((MetricSpec("error", "how wrong", "err", higher_is_better=False, interval=False),))
    rows = [{"model": m, "err": e} for m, e in [("a", 3.0), ("b", 1.0), ("c", 2.0)]]
    board = leaderboard(model_scores(rows, scoring), scoring, {})
    assert [r["model"] for r in board] == ["b", "c", "a"]


def test_an_unknown_mode_is_an_error_listing_the_known_ones():
    with pytest.raises(InputError, match=r"unknown benchmark mode 'furnia' \(known: .*furina"):
        get_mode("furnia")
