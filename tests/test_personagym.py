"""PersonaGym as a user meets it: its scores as a count by hand, a rerun that sends nothing, the paper's intent
as an option, and bad input as one line naming file, record and field (the requests themselves are compared
with the release's own code in test_personagym_release.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rpbench.samples import sample_path
from tests.helpers import TEST_KEY_ENV, rpbench
from tests.release_code import release_folder

pytestmark = pytest.mark.usefixtures("harness")
COMMIT = "536f705e610289c38d84e083fcea6ea5093d3a25"
PERSONAS, QUESTIONS = sample_path("personagym", "personas.json"), sample_path("personagym", "questions")
TASKS = ["Expected Action", "Toxicity", "Linguistic Habits", "Persona Consistency", "Action Justification"]
# The first evaluator grades the first persona's answers by task, the second persona's 5; the second evaluator
# grades the first persona's 3 and the second's 1.
FIRST = dict(zip(TASKS, [5, 4, 3, 2, 1], strict=True))


def _answers(tmp_path) -> str:
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps({"id": f"{n}:{t}:1", "answer": f"answer of persona {n} to {t}"}) + "\n"
                            for n in (1, 2) for t in TASKS))
    return str(path)


def _reply(body: dict) -> str:
    asked = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "create examples of each score category" in asked:
        return "Rubric 1 Examples:\n" + "\n\n".join(f"Score {s}:  Response - an example of {s}" for s in range(1, 6))
    n, task = re.search(r"answer of persona (\d) to ([A-Z][a-z]+(?: [A-Z][a-z]+)?)", asked).groups()  # type: ignore
    second = body["model"].endswith("second")
    score = (3 if n == "1" else 1) if second else (FIRST[task] if n == "1" else 5)
    return f"(1) Evaluation: as the rubric reads. Therefore, the final score is {score}"


def _models(tmp_path, loopback) -> str:
    path = tmp_path / "models.toml"
    path.write_text(f'[default]\nmodel = "openai/first"\napi_base = "{loopback.base_url}"\napi_key_env = '
                    f'"{TEST_KEY_ENV}"\ntimeout = 20\n[roles.personagym-evaluator-2]\nmodel = "openai/second"\n')
    return str(path)


def _run(tmp_path, loopback, *more: str):
    return rpbench("personagym", "run", "--personas", str(PERSONAS), "--questions", str(QUESTIONS), "--answers",
                   f"mine={_answers(tmp_path)}", "--models-file", _models(tmp_path, loopback), "--cache",
                   str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "out"), "--resamples", "40", *more)


def test_personagym_scores_as_a_count_by_hand_and_a_rerun_sends_nothing(loopback, tmp_path, monkeypatch):
    release_folder("vsamuel2003/PersonaGym", COMMIT)
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _reply
    ran = _run(tmp_path, loopback)
    assert ran.returncode == 0, ran.stderr[-2000:]
    # Ten questions, one a five: ten score examples, then each evaluator ten times.
    assert len(loopback.requests) == 10 + 2 * 10
    # By hand: the first persona's answers get the evaluators' mean, (5+3)/2 ... (1+3)/2, the second's (5+1)/2;
    # each task the mean of its two answers; the PersonaScore the mean of the tasks.
    tasks = {"Expected Action": 3.5, "Toxicity": 3.25, "Linguistic Habits": 3.0, "Persona Consistency": 2.75,
             "Action Justification": 2.5}
    board = {r["model"]: r for r in pq.read_table(tmp_path / "out" / "leaderboard.parquet").to_pylist()}["mine"]
    assert board["PersonaScore"] == pytest.approx(3.0) and board["n"] == 10
    assert {t: board[t] for t in tasks} == pytest.approx(tasks)
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "## Beside PersonaGym's released scores" in report and "| gpt_35 (released) | 4.28 | 4.96 |" in report
    assert "| mine | 3.50 | 3.25 | 3.00 | 2.75 | 2.50 | 3.00 |" in report  # in the release's task order

    sent = len(loopback.requests)
    again = _run(tmp_path, loopback)
    assert again.returncode == 0 and len(loopback.requests) == sent  # nothing repeated


def test_the_paper_s_intent_gives_each_answer_its_own_examples_the_rubrics_as_text_and_every_judge_the_system(
        loopback, tmp_path, monkeypatch):
    release_folder("vsamuel2003/PersonaGym", COMMIT)
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _reply
    ran = _run(tmp_path, loopback, "--intent", "paper")
    assert ran.returncode == 0, ran.stderr[-2000:]
    graded = [r for r in loopback.requests if "create examples" not in r["messages"][-1]["content"]]
    assert {r["messages"][0]["role"] for r in graded} == {"system"}  # the second evaluator's too
    asked = graded[0]["messages"][-1]["content"]
    assert "Score 1: \"an example of 1\"" in asked and "['" not in asked  # its own examples; text, not a list


def _bad(tmp_path, *args: str) -> str:
    ran = rpbench("personagym", "run", *args, "--answers", f"mine={_answers(tmp_path)}", "--out",
                  str(tmp_path / "out"))
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    return ran.stderr.strip().splitlines()[-1]


def test_bad_input_is_one_line_naming_file_record_and_field(tmp_path):
    release_folder("vsamuel2003/PersonaGym", COMMIT)
    personas = tmp_path / "personas.json"
    personas.write_text('{"persona": "a nurse"}')
    assert _bad(tmp_path, "--personas", str(personas), "--questions", str(QUESTIONS)) == (
        f"error: {personas}: a file of personas is a JSON list of texts, not dict")
    personas.write_text(json.dumps([json.loads(PERSONAS.read_text())[0], 5]))
    assert _bad(tmp_path, "--personas", str(personas), "--questions", str(QUESTIONS)) == (
        f"error: {personas}: record 2: a persona is a text")
    folder = tmp_path / "questions"
    folder.mkdir()
    first = json.loads(PERSONAS.read_text())[0]
    found = json.loads((QUESTIONS / f"{first}.json").read_text())
    del found["Toxicity"]
    (folder / f"{first}.json").write_text(json.dumps(found))
    personas.write_text(json.dumps([first]))
    assert _bad(tmp_path, "--personas", str(personas), "--questions", str(folder)) == (
        f"error: {folder / (first + '.json')}: field 'Toxicity': missing (every task has questions)")
    assert _bad(tmp_path, "--task", "Humour") == (
        "error: --task: no task 'Humour' (PersonaGym's: " + ", ".join(TASKS) + ")")
    assert _bad(tmp_path, "--personas", str(PERSONAS)) .startswith("error: --personas: give their questions too")


def _writer(body: dict) -> str:
    """Settings and questions as the release's prompts ask for them (a Python list in a code fence); the first
    sample of the second persona's questions is three short; everything else as ``_reply`` answers."""
    messages = body["messages"]
    asked = messages[-1]["content"]
    if "select the most relevant settings" in asked:
        return "```python\n['Wedding', 'Classroom']\n```"
    if "Generate exactly" in asked:
        n = int(re.search(r"Generate exactly (\d+)", asked).group(1))  # type: ignore[union-attr]
        short = "Osaka" in asked and body.get("seed") in (None, 0)
        return repr([f"Question {k} for the settings?" for k in range(1, n + 1 - 3 * short)])
    if messages[0]["content"].startswith("Adopt the identity of"):
        return "I would do it my way."
    asked = next(m["content"] for m in messages if m["role"] == "user")
    if "create examples of each score category" in asked:
        return _reply(body)
    return "\n".join(f"({k}) Evaluation: fine. Therefore, the final score is 4" for k in range(1, 6))


def test_questions_for_one_s_own_personas_are_written_as_the_release_writes_them(loopback, tmp_path, monkeypatch):
    """--generate-questions: the settings picked from the release's list, then ten questions a task; a reply
    three short is asked again as a new sample (seeded); the questions land in <out>/questions/ for reuse, and a
    rerun sends nothing."""
    release_folder("vsamuel2003/PersonaGym", COMMIT)
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _writer
    args = ["personagym", "run", "--personas", str(PERSONAS), "--generate-questions", "--task", "Toxicity",
            "--model", "personagym-actor", "--models-file", _models(tmp_path, loopback), "--cache",
            str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "out"), "--resamples", "40"]
    ran = rpbench(*args)
    assert ran.returncode == 0, ran.stderr[-2000:]
    asked = [r["messages"][-1]["content"] for r in loopback.requests]
    picks = [a for a in asked if "select the most relevant settings" in a]
    assert len(picks) == 2 and all("'Wedding', 'Business Dinner'" in a for a in picks)  # the list's repr
    written = [r for r in loopback.requests if "Generate exactly 10" in r["messages"][-1]["content"]]
    assert len(written) == 3 and sum(r.get("seed") == 1 for r in written) == 1  # the short one, sampled again
    assert all("['Wedding', 'Classroom']" in r["messages"][-1]["content"] for r in written)
    first = json.loads(PERSONAS.read_text())[0]
    saved = json.loads((tmp_path / "out" / "questions" / f"{first}.json").read_text())
    assert list(saved) == ["Toxicity"] and len(saved["Toxicity"]) == 10
    board = {r["model"]: r for r in pq.read_table(tmp_path / "out" / "leaderboard.parquet").to_pylist()}
    assert board["personagym-actor"]["n"] == 20 and board["personagym-actor"]["PersonaScore"] == 4.0
    sent = len(loopback.requests)
    assert rpbench(*args).returncode == 0 and len(loopback.requests) == sent


def test_personagym_wiring_is_no_larger_than_the_quiz():
    """Issue 79's measure: PersonaGym's mode is mostly its own logic (tasks/modes/personagym); what wires it into
    rpbench, its folder under flows/modes (spec, settings, flow), is no larger than the character quiz's."""
    flows = Path(__file__).resolve().parents[1] / "flows" / "modes"

    def lines(mode: str) -> int:
        return sum(len(f.read_text(encoding="utf-8").splitlines()) for f in (flows / mode).glob("*.py"))

    assert lines("personagym") <= lines("quiz"), (lines("personagym"), lines("quiz"))
