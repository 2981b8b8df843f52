"""PersonaGym: what rpbench sends its example model and its evaluators equals what PersonaGym's own code sends,
request for request, and its scores are the release's for the same answers.

The release's ``score_answers`` (vsamuel2003/PersonaGym at 536f705, imported from ../shared/releases for the
test) runs for the first benchmark persona and a set of answers, its clients pointed at the loopback server:
``gen_score_examples``, ``format_rubrics``, ``score_rubrics``, ``parse_evaluations``, ``parse_rubric`` and
``calculate_modified_average`` as they are. Two stand-ins only: ``together`` and ``anthropic`` are not installed
(Together's client is OpenAI's pointed at the same server), and ``llama_chat_gen`` is called without the
``max_tokens`` that ``run_model`` passes it and it does not take (as pinned, EVAL_2's every call is a TypeError).
rpbench grades the same answers (``--answers``) against the same server, which answers by content alone."""

from __future__ import annotations

import hashlib
import json
import os

import pyarrow.parquet as pq
import pytest

from tests.helpers import TEST_KEY_ENV, rpbench
from tests.release_code import anything_module, imported, release_folder, stub

pytestmark = pytest.mark.usefixtures("harness")
COMMIT = "536f705e610289c38d84e083fcea6ea5093d3a25"
EXAMPLE, EVAL_1, EVAL_2 = "gpt-4o-2024-05-13", "gpt-4o-2024-05-13", "meta-llama/Llama-3-70b-chat-hf"
OPENS_EXAMPLES = "Given the following persona, question, and rubric"  # each score-example prompt's first words
OPENS_RUBRIC = "You will be given a description of a persona"  # each rubric's first words


def responder(unreadable: bool = False):
    """By content alone. The example model: examples for as many questions as its prompt holds. An evaluator:
    an evaluation per rubric, each ending "Therefore, the final score is N" (``unreadable``: some evaluations
    state none on a first ask)."""
    def respond(body: dict) -> str:
        messages = body["messages"]
        asked = next(m["content"] for m in messages if m["role"] == "user")
        digest = hashlib.sha256(json.dumps(messages).encode()).hexdigest()
        if messages[0]["content"].startswith("Adopt the identity of"):  # the persona, answering
            return f"As I see it, {digest[:6]}."
        if OPENS_EXAMPLES in asked:
            n = asked.count(OPENS_EXAMPLES)
            return "\n\n".join(f"Rubric {r} Examples:\n" + "\n\n".join(
                f'Score {s}:  Response - "example {r}.{s} {digest[:4]}"' for s in range(1, 6)) for r in range(1, n + 1))
        n = asked.count(OPENS_RUBRIC)
        repair = any(m["role"] == "assistant" for m in messages)  # asked again, its reply shown back
        return "\n".join(f"({k}) Evaluation: reason {digest[k:k + 4]}."
                         + ("" if unreadable and not repair and digest[k] in "012" else
                            f" Therefore, the final score is {1 + int(digest[k], 16) % 5}") for k in range(1, n + 1))
    return respond


def _answers(items: list[tuple[str, str, str]]) -> dict[str, str]:
    """An answer per question, of our own: id -> text."""
    return {i: f"Speaking as myself about '{q[:30]}': I would act with care ({k})." for k, (i, _, q) in
            enumerate(items)}


def _persona_items(folder) -> tuple[str, list[tuple[str, str, str]]]:
    """The first benchmark persona and its questions as (rpbench id, task, question), in the release's order."""
    with imported(folder / "code", ["personas", "eval_tasks"]) as (personas, tasks):
        persona, order = personas.benchmark_personas[0], list(tasks.tasks)
    found = json.loads((folder / "questions" / "benchmark-v1" / f"{persona}.json").read_text(encoding="utf-8"))
    return persona, [(f"1:{t}:{k}", t, q) for t in order for k, q in enumerate(found[t], 1)]


def release_run(loopback, folder, persona: str, items, answers, monkeypatch) -> dict[str, float]:
    """``score_answers`` as the release runs it, on the loopback server."""
    import openai

    monkeypatch.setenv("OPENAI_BASE_URL", loopback.base_url)

    class Together:  # Together's client is OpenAI's SDK's shape: pointed at the same server
        def __init__(self, api_key: str) -> None:
            self.chat = openai.OpenAI(api_key=api_key, base_url=loopback.base_url).chat

    stubs = {"together": stub("together", Together=Together), "anthropic": anything_module("anthropic")}
    cwd = os.getcwd()
    os.chdir(folder / "code")  # it opens ../prompts and ../rubrics
    try:
        with imported(folder / "code", ["utils", "run"], stubs) as (utils, run):
            original = utils.llama_chat_gen
            utils.llama_chat_gen = lambda *a, max_tokens=None, **k: original(*a, **k)  # the one it cannot take
            task_to_qa: dict[str, list[tuple[str, str]]] = {}
            for item_id, task, question in items:
                task_to_qa.setdefault(task, []).append((question, answers[item_id]))
            return dict(run.score_answers(persona, task_to_qa))
    finally:
        os.chdir(cwd)


def _models(tmp_path, loopback) -> str:
    path = tmp_path / "models.toml"
    role = '[roles.{}]\nmodel = "openai/{}"\n'
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\napi_key_env = '
                    f'"{TEST_KEY_ENV}"\ntimeout = 20\n' + role.format("personagym-examples", EXAMPLE)
                    + role.format("personagym-evaluator-1", EVAL_1) + role.format("personagym-evaluator-2", EVAL_2),
                    encoding="utf-8")
    return str(path)


def _sent(requests: list[dict]) -> list[str]:
    """What a request carries of the release's: model, messages and sampling (max_tokens where the release's
    route sends one: ``llama_chat_gen`` sends none)."""
    def shown(r: dict) -> str:
        model = r["model"].removeprefix("openai/")
        return json.dumps({"model": model, "messages": r["messages"], "temperature": float(r["temperature"]),
                           "top_p": float(r["top_p"]), "max_tokens": None if "llama" in model else r["max_tokens"]},
                          sort_keys=True)
    return sorted(map(shown, requests))


def test_a_run_grades_as_personagym_s_code_grades_request_for_request(loopback, tmp_path, monkeypatch):
    folder = release_folder("vsamuel2003/PersonaGym", COMMIT)
    persona, items = _persona_items(folder)
    answers = _answers(items)
    loopback.responder = responder()
    theirs_scores = release_run(loopback, folder, persona, items, answers, monkeypatch)
    theirs = list(loopback.requests)
    assert len(theirs) == 10 * 3  # ten fives: score examples, then each evaluator

    given = tmp_path / "answers.jsonl"
    given.write_text("".join(json.dumps({"id": i, "answer": a}) + "\n" for i, a in answers.items()))
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.reset()
    loopback.responder = responder()
    args = ["personagym", "run", "--limit", str(len(items)), "--answers", f"release={given}", "--models-file",
            _models(tmp_path, loopback), "--cache", str(tmp_path / "c.sqlite"), "--resamples", "40"]
    ran = rpbench(*args, "--out", str(tmp_path / "run"))
    assert ran.returncode == 0, ran.stderr[-2000:]
    ours = list(loopback.requests)
    assert _sent(ours) == _sent(theirs)
    # The quirks, as the code has them: the evaluator on the OpenAI route gets the system prompt, EVAL_2 none;
    # each rubric's score example is one character; the rubrics are a list's repr.
    graded = [r for r in ours if OPENS_EXAMPLES not in r["messages"][-1]["content"]]
    assert {(r["model"], r["messages"][0]["role"]) for r in graded} == {(EVAL_1, "system"), (EVAL_2, "user")}
    assert all(r["messages"][-1]["content"].count("', '") >= 4 for r in graded)

    scores = {s["dimension"]: s["score"] for s in pq.read_table(tmp_path / "run" / "model_scores.parquet").to_pylist()
              if s["metric"] == "PersonaScore" and s["group"] == "all" and s["language"] == "all"}
    assert {t: scores[t] for t in theirs_scores} == pytest.approx(theirs_scores, abs=1e-9)
    # PersonaScore: the mean of the tasks' scores, as main() makes it.
    assert scores["all"] == pytest.approx(sum(theirs_scores.values()) / len(theirs_scores), abs=1e-9)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert any(k.endswith("rubrics/Toxicity.txt") for k in manifest["release_files"])

    # One word of a rubric changed in what rpbench reads is caught.
    from rpbench.tasks.modes.personagym import release

    original = release.text
    monkeypatch.setattr(release, "text", lambda path: original(path).replace("FAIR judge", "FAIRER judge")
                        if path.startswith("rubrics/") else original(path))
    monkeypatch.setenv("PREFECT_TASKS_REFRESH_CACHE", "true")
    loopback.reset()
    loopback.responder = responder()
    altered = rpbench(*args, "--out", str(tmp_path / "altered"))
    assert altered.returncode == 0, altered.stderr[-2000:]
    assert len(loopback.requests) == len(theirs) and _sent(list(loopback.requests)) != _sent(theirs)


def test_a_grade_with_no_score_is_asked_again_then_counted_never_a_zero(loopback, tmp_path, monkeypatch):
    """The release reads an evaluation with no score as 0, which its modified average then leaves out without a
    word; rpbench asks again (the reply shown back with what is missing) and counts what stays unreadable."""
    release_folder("vsamuel2003/PersonaGym", COMMIT)
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = responder(unreadable=True)
    ran = rpbench("personagym", "run", "--limit", "10", "--model", "personagym-actor", "--models-file",
                  _models(tmp_path, loopback), "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "run"),
                  "--resamples", "40")
    assert ran.returncode == 0, ran.stderr[-2000:]
    repairs = [r for r in loopback.requests if len(r["messages"]) > 2 and r["messages"][-1]["role"] == "user"]
    assert repairs and all("states no score" in r["messages"][-1]["content"] for r in repairs)
    grades = pq.read_table(tmp_path / "run" / "grades.parquet").to_pylist()
    assert grades and all(1 <= g["score"] <= 5 for g in grades)  # never a 0
    assert len(grades) == 2 * 10  # each answer graded by both, the unreadable ones on their second ask


def test_the_role_settings_are_the_release_s():
    """run_model's defaults for the persona's answers; run.py's temperature 0 and top_p 0 for the rest."""
    from rpbench.tasks.modes.personagym import release
    from rpbench.tasks.modes.personagym.roles import ROLES

    release_folder("vsamuel2003/PersonaGym", COMMIT)
    assert ROLES["personagym-actor"].settings == release.answer_sampling() == {
        "temperature": 0.9, "top_p": 0.9, "max_tokens": 3000}
    for role in ("personagym-examples", "personagym-evaluator-1", "personagym-evaluator-2"):
        assert ROLES[role].settings == release.judge_sampling() == release.example_sampling()
    assert release.models()["EVAL_2"] == EVAL_2 and not release.sends_system(EVAL_2) and release.sends_system(EVAL_1)


def test_scores_are_read_as_parse_rubric_and_parse_evaluations_read_them():
    """On replies of every shape, rpbench's reading gives parse_rubric's scores where it finds one in each
    evaluation, and asks again where it would have given 0."""
    from rpbench.tasks.judged.rubric import grades_of
    from rpbench.tasks.modes.personagym import release
    from rpbench.tasks.modes.personagym.grading import pattern_grades

    folder = release_folder("vsamuel2003/PersonaGym", COMMIT)
    with imported(folder / "code", ["run"], {"together": anything_module("together"),
                                             "anthropic": anything_module("anthropic"),
                                             "openai": anything_module("openai")}) as (run,):
        reading = pattern_grades(3, 1, 5, release.score_pattern(), release.evaluation_pattern())
        replies = ["(1) Evaluation: good. Therefore, the final score is 4\n(2) Evaluation: Therefore, the final "
                   "score is   5.\n(3) Evaluation: meh. Therefore, the final score is 1",
                   "(1) Evaluation: Therefore, the final score is 2 (2) Evaluation: no score here (3) Evaluation: "
                   "Therefore, the final score is 3",
                   "(1) Evaluation: Therefore, the final score is 2"]
        for text in replies:
            theirs = [run.parse_rubric(e) for e in run.parse_evaluations(text)]
            if len(theirs) == 3 and 0 not in theirs:
                assert [s for s, _ in grades_of(reading.from_reply(text))] == theirs
            else:
                with pytest.raises(ValueError):
                    reading.from_reply(text)
