"""Benchmark modes as plug-ins: a toy quiz mode (tests/toy_quiz.py, wired as every mode is: settings, a check,
a stage, a flow, a command) registered here by its spec alone, with two metrics and an annotation kind, runs
from the command line and gets a leaderboard, a report and Label Studio tasks from the shared code through its
hooks; unknown names fail loudly, and two modes or roles of one name are refused."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import re

import pyarrow.parquet as pq
import pytest

from rpbench.flows.kit.front.registry import annotation_kinds, get_mode, modes, register, unregister
from rpbench.flows.kit.running.finish import publish_outputs
from rpbench.flows.kit.running.report import report_of
from rpbench.storage.schemas import FAILURES
from rpbench.storage.tables import write_records
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import Failure
from rpbench.tasks.reports.spec import MetricSpec, Scoring
from tests.helpers import TEST_KEY_ENV, loopback_models_file, rpbench
from tests.toy_quiz import QUIZ_CHECK, TOY, QuizAnswer


def _rows() -> list[QuizAnswer]:
    rng = random.Random(0)
    skill = {"sharp": 0.9, "dull": 0.3}
    return [QuizAnswer(item_id=f"q{i}", model=m, language="en" if i % 3 else "zh",
                       correct=float(rng.random() < p), seconds=1.0 + rng.random() + (m == "dull"))
            for m, p in skill.items() for i in range(60)]


@pytest.fixture
def toy():
    register(TOY)
    yield TOY
    unregister(TOY.name)


def test_a_toy_mode_gets_a_leaderboard_and_a_report_without_touching_shared_code(toy, tmp_path):
    assert get_mode("toy-quiz") is TOY and "furina" in modes()
    write_records(tmp_path / "answers.parquet", _rows(), TOY.item_table)
    write_records(tmp_path / "failures.parquet",
                  [Failure(stage="answers", model="dull", item_id="q99", kind="answer_failed")], FAILURES)
    tables = {"items": [str(tmp_path / "answers.parquet")], "failures": [str(tmp_path / "failures.parquet")]}
    result = asyncio.run(report_of("toy-quiz").fn(mode="toy-quiz", inputs=[*tables["items"], *tables["failures"]],
                                                  options={**tables, "n_items": 60}, resamples=200, seed=0,
                                                  out=str(tmp_path / "out")))
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
    assert "seconds (lower is better): mean time to read the answer aloud" in report and "dull: answer_failed 1" in report
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<table class=\"board\">" in html and html.count("data:image/png;base64,") == 1  # one breakdown chart: language
    leaderboard = pq.read_table(tmp_path / "out" / "leaderboard.parquet").to_pylist()
    assert [r["model"] for r in leaderboard] == ["sharp", "dull"] and not math.isnan(leaderboard[0]["seconds"])


def test_a_model_scored_on_one_item_has_no_interval_rather_than_a_zero_width_one(toy, tmp_path):
    """One item says nothing of a score's spread: its interval is undefined (nan in the tables, a dash in the
    report, null in the manifest), where [x, x] would claim certainty. Equal values on two items keep [x, x]."""
    from rpbench.storage.runs import RunDir

    lone = QuizAnswer(item_id="q0", model="lone", language="en", correct=1.0, seconds=2.0)
    pair = [QuizAnswer(item_id=f"q{i}", model="pair", language="en", correct=1.0, seconds=2.0) for i in (0, 1)]
    write_records(tmp_path / "answers.parquet", [*_rows(), lone, *pair], TOY.item_table)
    items = [str(tmp_path / "answers.parquet")]
    result = asyncio.run(report_of("toy-quiz").fn(mode="toy-quiz", inputs=items, options={"items": items,
                                                  "failures": [], "n_items": 60}, resamples=200, seed=0,
                                                  out=str(tmp_path / "out")))
    publish_outputs(tmp_path / "out")
    board = {r["model"]: r for r in result.summary["leaderboard"]}
    assert math.isnan(board["lone"]["ci_low"]) and math.isnan(board["lone"]["ci_high"]) and board["lone"]["n"] == 1
    assert board["pair"]["ci_low"] == board["pair"]["ci_high"] == board["pair"]["accuracy"] == 100.0
    assert board["sharp"]["ci_low"] < board["sharp"]["accuracy"] < board["sharp"]["ci_high"]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| lone | 100.0 | - | 1 |" in report and "| pair | 100.0 | 100.0-100.0 | 2 |" in report
    run = RunDir(tmp_path / "out")
    run.write_manifest(evaluation={"leaderboard": result.summary["leaderboard"]})
    written = json.loads(run.manifest_path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in manifest"))
    lone_row = next(r for r in written["evaluation"]["leaderboard"] if r["model"] == "lone")
    assert lone_row["ci_low"] is None and lone_row["ci_high"] is None and lone_row["accuracy"] == 100.0


def test_a_page_over_run_folders_shows_each_number_as_the_runs_report_does(toy, tmp_path):
    """`rpbench report` knows no mode: the leaderboard keeps how its report showed each column (digits, unit),
    so the index shows 2.00 seconds where the report does, not 2.0; a leaderboard without it gets one decimal."""
    from rpbench.storage.runs import RunDir
    from rpbench.tasks.reports.index import write_index

    rows = [QuizAnswer(item_id=f"q{i}", model="pair", language="en", correct=1.0, seconds=2.0) for i in (0, 1)]
    write_records(tmp_path / "answers.parquet", rows, TOY.item_table)
    items = [str(tmp_path / "answers.parquet")]
    asyncio.run(report_of("toy-quiz").fn(mode="toy-quiz", inputs=items, options={"items": items, "failures": [],
                                         "n_items": 2}, resamples=50, seed=0, out=str(tmp_path / "run")))
    publish_outputs(tmp_path / "run")
    RunDir(tmp_path / "run").write_manifest(flow="toy-quiz", outcome={"status": "ok", "reasons": []})
    assert "| pair | 100.0 | 100.0-100.0 | 2 | 100.0 | 2.00 |" in (tmp_path / "run" / "report.md").read_text()
    html = write_index([tmp_path / "run"], tmp_path / "index")["index"].read_text()
    assert '<td class="num">2.00</td>' in html and "<th>seconds</th>" in html
    board = pq.read_table(tmp_path / "run" / "leaderboard.parquet")
    pq.write_table(board.replace_schema_metadata({}), tmp_path / "run" / "leaderboard.parquet")  # an older run's
    html = write_index([tmp_path / "run"], tmp_path / "index2")["index"].read_text()
    assert '<td class="num">2.0</td>' in html and '<td class="num">2.00</td>' not in html


QUIZ = [{"id": "q1", "question": "What colour is the sky on a clear day?", "answer": "blue"},
        {"id": "q2", "question": "What do bees make?", "answer": "honey"},
        {"id": "q3", "question": "Which way does the sun rise?", "answer": "east", "language": "zh"}]


def _quiz_reply(body: dict) -> str:
    asked = body["messages"][-1]["content"]
    return {"sky": "Blue, mostly.", "bees": "Wax.", "sun": "In the east, every morning."}[
        next(k for k in ("sky", "bees", "sun") if k in asked)]


def test_the_toy_mode_runs_from_its_command_with_a_model_and_a_file_of_answers(toy, harness, loopback, tmp_path,
                                                                              monkeypatch):
    """The tutorial as written: `rpbench toy-quiz run` asks the model once per question, reads the answer file
    with no call, ranks both, and a rerun sends nothing; a name given as a model and as answers is refused."""
    import json

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _quiz_reply
    quiz = tmp_path / "quiz.jsonl"
    quiz.write_text("".join(json.dumps(q) + "\n" for q in QUIZ))
    mine = tmp_path / "mine.jsonl"
    mine.write_text("".join(json.dumps({"id": q["id"], "answer": q["answer"]}) + "\n" for q in QUIZ))
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    args = ["toy-quiz", "run", "--questions", str(quiz), "--model", "quizzer", "--answers", f"oracle={mine}",
            "--out", str(tmp_path / "out"), "--models-file", str(models), "--cache", str(tmp_path / "c.sqlite")]
    ran = rpbench(*args)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert len(loopback.requests) == 3  # the model's three questions; the oracle's file sent nothing
    # The kit's lines (RunCommand): the headline with its interval, the items and the failures.
    assert "oracle: accuracy 100.00 [100.00, 100.00]  n=3 failed=0" in ran.stdout
    assert "quizzer: accuracy 66.67 [" in ran.stdout
    board = pq.read_table(tmp_path / "out" / "leaderboard.parquet").to_pylist()
    assert [r["model"] for r in board] == ["oracle", "quizzer"]
    again = rpbench(*args)
    assert again.returncode == 0 and len(loopback.requests) == 3
    both = rpbench(*args[:-4], "--answers", f"quizzer={mine}", *args[-4:])
    assert both.returncode == 2 and "'quizzer' is also a --model" in both.stderr


def test_bad_input_found_only_inside_a_stage_ends_the_run_in_one_line_with_no_traceback(toy, harness, loopback,
                                                                                        tmp_path, monkeypatch):
    """A file that turns bad between the command's check and the stage that reads it (edited meanwhile): the
    run ends Failed with the input error's one line, exit 2, and no traceback in the log (it was Prefect's
    traceback of the task and of the flow before the line)."""
    import prefect.context

    import tests.toy_quiz as quiz_mode

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _quiz_reply
    quiz = tmp_path / "quiz.jsonl"
    quiz.write_text("".join(json.dumps(q) + "\n" for q in QUIZ))
    real = quiz_mode.read_questions

    def edited_meanwhile(path):
        if prefect.context.TaskRunContext.get() is not None:  # read by the stage, after the check
            raise InputError(f"{path}: line 2: field 'answer': missing")
        return real(path)

    monkeypatch.setattr(quiz_mode, "read_questions", edited_meanwhile)
    logged: list[logging.LogRecord] = []
    collect = logging.Handler(logging.ERROR)
    collect.emit = logged.append  # type: ignore[method-assign]
    prefect_log = logging.getLogger("prefect")  # the task's and the flow's loggers are below it
    prefect_log.addHandler(collect)
    try:
        ran = rpbench("toy-quiz", "run", "--questions", str(quiz), "--model", "quizzer", "--out",
                      str(tmp_path / "out"), "--models-file",
                      str(loopback_models_file(tmp_path / "models.toml", loopback)), "--cache", str(tmp_path / "c.sqlite"))
    finally:
        prefect_log.removeHandler(collect)
    assert ran.returncode == 2, ran.stderr[-2000:]
    assert "Traceback" not in ran.stderr, ran.stderr[-3000:]
    shown = [logging.Formatter().format(r) for r in logged]  # as a console or the UI's log shows each record
    assert shown and not [text for text in shown if "Traceback" in text], shown
    assert any("line 2: field 'answer': missing" in r.getMessage() for r in logged)  # the UI's log says why
    assert ran.stderr.strip().splitlines()[-1] == f"error: {quiz}: line 2: field 'answer': missing"


def test_lower_is_better_headline_ranks_ascending():
    from rpbench.tasks.reports.scores import leaderboard, model_scores

    scoring = Scoring((MetricSpec("error", "how wrong", "err", higher_is_better=False, interval=False),))
    rows = [{"model": m, "err": e} for m, e in [("a", 3.0), ("b", 1.0), ("c", 2.0)]]
    board = leaderboard(model_scores(rows, scoring), scoring, {})
    assert [r["model"] for r in board] == ["b", "c", "a"]


def test_an_unknown_mode_is_an_error_listing_the_known_ones():
    with pytest.raises(InputError, match=r"unknown benchmark mode 'furnia' \(did you mean 'furina'\? known: .*furina"):
        get_mode("furnia")


def test_a_toy_modes_annotation_kind_reaches_label_studio_through_the_shared_command(toy, tmp_path):
    from rpbench.tasks.annotation.results import read_back

    assert annotation_kinds()["quiz-check"] == (TOY, QUIZ_CHECK)
    write_records(tmp_path / "quiz_answers.parquet", _rows(), TOY.item_table)
    tasks = QUIZ_CHECK.tasks(tmp_path, 3, 0)
    assert [t["rpbench_key"] for t in tasks] == ["q0|sharp|quiz-check", "q1|sharp|quiz-check", "q2|sharp|quiz-check"]
    # The shared command finds the kind by name and builds its tasks before it needs a server (none here).
    ran = rpbench("annotate", "push", "--eval", str(tmp_path), "--task", "quiz-check", "--url", "http://127.0.0.1:9",
                  "--project", "quiz", "--limit", "3", env={"LABEL_STUDIO_API_KEY": "not-a-real-token"})
    assert ran.returncode == 2 and "127.0.0.1:9" in ran.stderr and "Traceback" not in ran.stderr
    unknown = rpbench("annotate", "push", "--eval", str(tmp_path), "--task", "quiz", "--url", "http://x",
                      "--project", "q")
    assert unknown.returncode == 2 and "--task: unknown task kind 'quiz'" in unknown.stderr and "quiz-check" in unknown.stderr
    # Another benchmark's run folder is named as such, before the kind looks for tables it cannot find.
    (tmp_path / "manifest.json").write_text(json.dumps({"flow": "roleinteract"}))
    other = rpbench("annotate", "push", "--eval", str(tmp_path), "--task", "quiz-check", "--dry-run")
    assert other.returncode == 2 and f"is a run of roleinteract; quiz-check tasks come from a {TOY.name} run" in \
        other.stderr, other.stderr
    # Answers read back by the kind the task names; a task of no registered kind is left alone.
    answered = [{"id": 1, "data": tasks[0], "annotations": [
        {"completed_by": 7, "result": [{"from_name": "right", "value": {"choices": ["yes"]}}], "updated_at": "t"}]},
        {"id": 2, "data": {**tasks[1], "task": "someone-elses"}, "annotations": []}]
    got = read_back(answered, {7: "ann@x"}, {"quiz-check": QUIZ_CHECK})
    assert [(r["item_id"], r["right"], r["annotator"]) for r in got.rows] == [("q0", "yes", "ann@x")]
    assert got.foreign == 1


def test_two_modes_of_one_name_or_one_role_in_two_modes_are_refused(toy):
    import dataclasses

    register(TOY)  # the same spec again: harmless
    with pytest.raises(ValueError, match="two benchmark modes are called 'toy-quiz'"):
        register(dataclasses.replace(TOY, description="another quiz"))
    with pytest.raises(ValueError, match="declares role 'judge', which mode 'furina' declares already"):
        register(dataclasses.replace(TOY, name="toy-two", roles={"judge": "judges again"}))
    assert "toy-two" not in modes()


@pytest.mark.parametrize(("change", "rule"), [
    ({"checks": {"quizz": "tests.toy_quiz:check_quiz"}}, "rule 'checks': checks ['quizz'] are for no flow"),
    ({"flows": {"toy": "tests.toy_quiz:quiz", "again": "tests.toy_quiz:quiz"}},
     "rule 'run-command': RunCommand runs the mode's one flow, and it has 2"),
    ({"smoke": None}, "rule 'smoke': the hardening tests run every registered mode's smoke scenario, and none can "
                      "be worked out for this one: a scenario runs on the mode's samples"),
])
def test_a_mode_that_breaks_a_rule_is_refused_as_it_is_registered_naming_the_rule(change, rule):
    """What every mode must satisfy is said when it is registered, from its spec alone: a newcomer reads the
    rule there, not in a shared test failing later."""
    import dataclasses

    with pytest.raises(ValueError, match=re.escape(f"mode 'toy-three' breaks {rule}")):
        register(dataclasses.replace(TOY, name="toy-three", roles={"quizzer3": "answers"}, **change))
    assert "toy-three" not in modes()


def test_every_installed_mode_keeps_the_rules():
    from rpbench.flows.kit.front.registry import broken_rules

    assert {name: broken_rules(mode) for name, mode in modes().items()} == {name: [] for name in modes()}


def test_a_mode_registered_before_the_installed_ones_are_found_is_checked_against_them(monkeypatch):
    """A plug-in registered first (nothing has asked for the modes yet) still may not take a built-in mode's
    role: the installed modes are found before it is added, not after (when the clash would surface later,
    blamed on the built-in mode)."""
    import dataclasses

    from rpbench.flows.kit.front import registry

    monkeypatch.setattr(registry, "_modes", {})
    monkeypatch.setattr(registry, "_discovered", False)
    with pytest.raises(ValueError, match="declares role 'judge', which mode 'furina' declares already"):
        register(dataclasses.replace(TOY, name="toy-two", roles={"judge": "judges again"}))
    assert "toy-two" not in modes() and "furina" in modes()


def test_a_command_module_is_known_as_its_modes_when_the_spec_declares_the_commands():
    """A command written in a mode's commands module (FURINA's demo) knows its mode, so its --out is refused
    when the folder holds another mode's run, though the spec declares the commands instead of naming a
    function that adds them."""
    from rpbench.flows.kit.front.registry import mode_of_module

    assert mode_of_module("rpbench.flows.modes.furina.commands") == "furina"
    assert mode_of_module("rpbench.flows.modes.pingpong.commands") == "pingpong"
    assert mode_of_module("rpbench.flows.modes.nothing.commands") is None


def test_a_modes_settings_references_are_its_flows_own_settings_models():
    from rpbench.flows.kit.front.registry import load_ref, modes
    from rpbench.flows.suite.plan import settings_model

    named = 0
    for mode in modes().values():
        for flow, ref in mode.settings.items():
            assert load_ref(ref) is settings_model(load_ref(mode.flows[flow])), (mode.name, flow)
            named += 1
    assert named >= 7


def _python(code: str) -> str:
    """What a fresh interpreter running ``code`` prints (its imports are its own)."""
    import subprocess
    import sys

    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert ran.returncode == 0, ran.stderr[-2000:]
    return ran.stdout


def test_a_suite_file_is_checked_without_importing_prefect_or_litellm():
    """So a typo in a suite file is one line in about a second, as for every other command."""

    code = ("from rpbench.flows.kit.running.environment import setup_environment; setup_environment()\n"
            "from rpbench.flows.suite.plan import check_suite\n"
            "from rpbench.flows.suite.settings import SuiteSettings\n"
            "plan = check_suite(SuiteSettings(models=['test']))\n"
            "import sys; print(len(plan.modes), 'prefect' in sys.modules, 'litellm' in sys.modules)")
    assert _python(code).split() == ["7", "False", "False"]  # every mode of the default suite


def test_importing_any_flow_module_leaves_litellm_unimported():
    """litellm takes seconds to import: it comes in with the first gateway a stage makes, not with the modules
    every command, deployment and served flow loads (each mode's flows, found from the registry)."""

    code = ("import importlib, sys\n"
            "from rpbench.flows.kit.front.registry import modes\n"
            "names = sorted({ref.split(':')[0] for m in modes().values() for ref in m.flows.values()})\n"
            "for name in names: importlib.import_module(name)\n"
            "import rpbench.tasks.llm.gateway\n"
            "print(len(names), 'litellm' in sys.modules)")
    count, imported = _python(code).split()
    assert int(count) >= 8 and imported == "False"


def test_the_toy_modes_smoke_scenario_runs_twice_and_the_second_run_sends_nothing(toy, harness, loopback, tmp_path,
                                                                                 monkeypatch):
    """Its smoke scenario (what the hardening tests run of every registered mode): a model and a file of answers
    on each question; the model's replies read from the kit's stand-in replies the loopback server gives."""
    from tests.helpers import any_mode_responder

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = any_mode_responder
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    (step,) = TOY.smoke_steps(tmp_path / "work")
    extra = ["--models-file", str(models), "--cache", str(tmp_path / "c.sqlite")]
    first = rpbench(*step.args, *extra)
    assert first.returncode == 0, first.stderr[-2000:]
    sent = len(loopback.requests)
    board = {r["model"]: r for r in pq.read_table(step.out / "leaderboard.parquet").to_pylist()}
    assert sent == 4 and board["oracle"]["accuracy"] == 100.0 and board["quizzer"]["n"] == 4
    # Its scoring hook gives the viewer nothing: a sample per row of its item table, scored and filterable.
    from rpbench.tasks.reports.viewer import VIEWER_FILE, read_viewer

    shown = read_viewer(step.out / VIEWER_FILE)["samples"]
    rows = pq.read_table(step.out / "quiz_answers.parquet").to_pylist()
    assert len(shown) == len(rows) == 8
    assert [(s["model"], s["score"], s["facets"]["language"]) for s in shown] == [
        (r["model"], f"accuracy {r['correct']:g}, seconds {r['seconds']:g}", r["language"]) for r in rows]
    again = rpbench(*step.args, *extra)
    assert again.returncode == 0 and len(loopback.requests) == sent
