"""The rubric benchmark (flows/modes/rubric), the guide's worked example of a judged benchmark: a mode of three
small files on the kit's judged pieces. It runs from its command with a model, a file of answers and two judges,
asks each item in its language's templates, asks a judge again on a grade it cannot read and then counts it,
combines the judges by the rule named, scores exactly as a count by hand does, and refuses a bad file in one
line; it stays small."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rpbench.samples import sample_path
from tests.helpers import TEST_KEY_ENV, loopback_models_file, rpbench

ITEMS = sample_path("rubric", "items.jsonl")
ANSWERS = sample_path("rubric", "answers.jsonl")
MODE = Path(__file__).resolve().parents[1] / "flows" / "modes" / "rubric"
BY_ID = {json.loads(line)["id"]: json.loads(line) for line in ITEMS.read_text(encoding="utf-8").splitlines()}
GIVEN = {json.loads(line)["id"]: json.loads(line)["answer"] for line in ANSWERS.read_text(encoding="utf-8").splitlines()}

# The grades each judge gives the sample file's answers (None: a reply with no score in the scale, every time).
FIRST = {"holmes-1": 5, "holmes-2": 5, "bennet-1": 5, "bennet-2": 2, "sunwukong-1": 5, "sunwukong-2": 1}
SECOND = {"holmes-1": 4, "holmes-2": 5, "bennet-1": 4, "bennet-2": 2, "sunwukong-1": 5, "sunwukong-2": None}


def _reply(body: dict) -> str:
    """The model under test answers "In character: <prompt>" (nothing at all to holmes-2); the first judge grades
    those 3 and the second 2; the sample answers as FIRST and SECOND say."""
    messages = body["messages"]
    if messages[0]["role"] == "system":  # the model under test, in character
        prompt = messages[1]["content"]
        return "" if prompt == BY_ID["holmes-2"]["prompt"] else f"In character: {prompt}"
    asked = messages[0]["content"]
    item = next(i for i, x in BY_ID.items() if x["prompt"] in asked)
    second = body["model"].endswith("second")
    if "In character: " in asked:
        score: int | None = 2 if second else 3
    else:
        assert GIVEN[item] in asked
        score = (SECOND if second else FIRST)[item]
    return json.dumps({"reasoning": "as the rubric reads", "score": 7 if score is None else score})


def _run(tmp_path, loopback, *more: str):
    models = loopback_models_file(tmp_path / "models.toml", loopback, rest='[roles.second-judge]\nmodel = '
                                  '"openai/second"\n')
    return rpbench("rubric", "run", "--items", str(ITEMS), "--model", "rubric-actor", "--answers",
                   f"sample={ANSWERS}", "--judge", "rubric-judge", "--judge", "second-judge", "--out",
                   str(tmp_path / "out"), "--models-file", str(models), "--cache", str(tmp_path / "c.sqlite"),
                   "--max-failure-share", "0.2", *more)


def _board(tmp_path) -> dict:
    return {r["model"]: r for r in pq.read_table(tmp_path / "out" / "leaderboard.parquet").to_pylist()}


def test_the_rubric_runs_from_its_command_and_scores_as_a_count_by_hand(harness, loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _reply
    ran = _run(tmp_path, loopback)
    assert ran.returncode == 0, ran.stderr[-2000:]
    requests = list(loopback.requests)
    # In character, in the item's language: the system prompt is the persona's, the user's message the prompt.
    actor = [r for r in requests if r["messages"][0]["role"] == "system"]
    zh = next(r for r in actor if r["messages"][1]["content"] == BY_ID["sunwukong-1"]["prompt"])
    assert zh["messages"][0]["content"].startswith("你是孙悟空，花果山水帘洞的美猴王。")
    en = next(r for r in actor if r["messages"][1]["content"] == BY_ID["holmes-1"]["prompt"])
    assert en["messages"][0]["content"].startswith("You are Sherlock Holmes, the consulting detective")
    graded = [r for r in requests if r["messages"][0]["role"] == "user"]
    assert all(r["response_format"]["json_schema"]["schema"]["properties"]["score"] == {
        "maximum": 5, "minimum": 1, "title": "Score", "type": "integer"} for r in graded)
    assert any("评分标准（1 到 5）" in r["messages"][0]["content"] for r in graded)
    # Asked again on the grade off the scale (the models file's parse attempts: 3), as on the empty reply.
    again = [r for r in graded if r["model"].endswith("second") and GIVEN["sunwukong-2"] in r["messages"][0]["content"]]
    assert len({json.dumps(r["messages"]) for r in again}) == 3  # the request, then twice with the repair

    # By hand. The file: each item the judges' mean, sunwukong-2 the first judge's 1 alone (the second failed it,
    # counted): (4.5 + 5 + 4.5 + 2 + 5 + 1) / 6. The model: 2.5 on the five it answered; holmes-2 failed.
    board = _board(tmp_path)
    assert board["sample"]["score"] == pytest.approx(22 / 6) and board["sample"]["n"] == 6
    assert board["sample"]["Sherlock Holmes"] == pytest.approx(4.75) and board["sample"]["孙悟空"] == 3.0
    assert board["sample"]["graded"] == pytest.approx(500 / 6) and board["sample"]["failed"] == 0
    assert board["rubric-actor"]["score"] == 2.5 and board["rubric-actor"]["n"] == 5
    assert board["rubric-actor"]["failed"] == 1 and board["rubric-actor"]["failed_share"] == pytest.approx(1 / 6)
    failures = pq.read_table(tmp_path / "out" / "failures.parquet").to_pylist()
    assert sorted((f["model"], f["item_id"], f["kind"], f["scored"]) for f in failures) == [
        ("rubric-actor", "holmes-2", "answer_failed", False), ("sample", "sunwukong-2", "grade_failed", True)]
    grades = pq.read_table(tmp_path / "out" / "grades.parquet").to_pylist()
    assert len(grades) == 11 + 10 and {g["judge"] for g in grades} == {"rubric-judge", "second-judge"}
    # The report: each character's mean with its interval and n, and the failure share.
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert re.search(r"\| sample \| 3\.25 \[[\d.]+, [\d.]+\] \(2\) \| 4\.75 \[[\d.]+, [\d.]+\] \(2\) \| 3\.00 ", report)
    assert "| 100.0 | 1 | 16.7 |" in report and "grade_failed 1" in report
    viewer = (tmp_path / "out" / "viewer.html").read_text(encoding="utf-8")
    assert "Horsham" in viewer and "second-judge: 4" in viewer
    assert "sample: score 3.67 [" in ran.stdout

    # The same run combined by another rule sends only what failed again (the empty reply, the off-scale grade).
    sent = len(loopback.requests)
    again = _run(tmp_path, loopback, "--combine", "min")
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(loopback.requests) - sent == 3 + 3
    assert _board(tmp_path)["sample"]["score"] == pytest.approx(21 / 6)  # (4 + 5 + 4 + 2 + 5 + 1) / 6


@pytest.mark.parametrize(("line", "field"), [
    ({"id": "x", "persona": "p", "character": "c"}, "field 'prompt': missing"),
    ({"id": "x", "persona": "p", "prompt": 5, "character": "c"}, "field 'prompt': not a text"),
    ({"id": "x", "persona": "p", "prompt": "q", "character": "c", "language": "fr"},
     "field 'language': 'fr' has no prompt (the benchmark's languages: en, zh)"),
    ({"id": "holmes-1", "persona": "p", "prompt": "q", "character": "c"}, "field 'id': 'holmes-1' appears more "
                                                                          "than once"),
])
def test_a_bad_file_of_items_is_one_line_naming_the_file_the_line_and_the_field(line, field, tmp_path):
    bad = tmp_path / "items.jsonl"
    bad.write_text(ITEMS.read_text(encoding="utf-8").splitlines()[0] + "\n" + json.dumps(line) + "\n")
    ran = rpbench("rubric", "run", "--items", str(bad), "--answers", f"sample={ANSWERS}", "--out",
                  str(tmp_path / "out"))
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert ran.stderr.strip().splitlines()[-1] == f"error: {bad}: line 2: {field}"


def test_answers_in_the_layout_a_mode_declares_are_read_under_its_field(tmp_path):
    """A mode whose answer files hold ``{"id", "reply"}`` says so once (``answer_field``): the help, the check
    and the reader follow it."""
    from rpbench.flows.kit.front.judged import check_judged
    from rpbench.flows.modes.rubric.mode import RubricSettings
    from rpbench.tasks.core.errors import InputError

    class Replies(RubricSettings):
        answer_field = "reply"

    assert '"reply": the reply\'s text' in (Replies.model_fields["answers"].description or "")
    replies = tmp_path / "replies.jsonl"
    replies.write_text("".join(json.dumps({"id": k, "reply": v}) + "\n" for k, v in GIVEN.items()))
    check_judged(Replies(items=str(ITEMS), answers=[f"mine={replies}"]))
    with pytest.raises(InputError, match=r"answers.jsonl: line 1: field 'reply': missing"):
        check_judged(Replies(items=str(ITEMS), answers=[f"mine={ANSWERS}"]))


def test_the_rubric_is_three_files_and_fewer_than_150_lines():
    """The issue's measure of a newcomer's judged benchmark: at most 4 files and 150 lines besides its prompts,
    samples and test (it was 16 files and 481 lines)."""
    files = sorted(MODE.glob("*.py"))
    lines = sum(len(f.read_text(encoding="utf-8").splitlines()) for f in files)
    assert len(files) <= 4 and lines <= 150, (len(files), lines)


def test_a_judged_mode_whose_settings_name_no_judge_is_refused_as_it_is_declared():
    from rpbench.flows.kit.front.judged import JudgedSettings

    with pytest.raises(TypeError, match="NoJudge: a judged mode's settings name the model under test's role and"):
        type("NoJudge", (JudgedSettings,), {"__module__": __name__, "role": "r"})
