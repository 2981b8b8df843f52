"""CharacterBench: the released replies judged as the release's judge judged them reproduce its figures; a live
run asks the model, then the judge sees its reply; judgments are read strictly; bad files are one line."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers import TEST_KEY_ENV, loopback_models_file, released, rpbench

pytestmark = pytest.mark.usefixtures("harness")
ROOT = Path(__file__).resolve().parents[1]
FIGURES = json.loads((Path(__file__).parent / "data" / "characterbench_released_figures.json").read_text())
SAMPLES = ROOT / "samples" / "characterbench"
DIMENSIONS = ("attribute_consistency_bot", "attribute_consistency_human", "behavior_consistency_human",
              "empathetic_responsiveness", "engagement", "human_likeness", "memory_consistency")


def _released_judge(language: str):
    """A stand-in CharacterJudge: for each judge request, the released prediction of the item it shows (found by
    the reply and the user's last turn it quotes, and the dimension its judge prompt's task names)."""
    from rpbench.tasks.modes.characterbench.release import criterion

    by_reply: dict[str, list[tuple[str, str, float]]] = {}
    user = "用户" if language == "zh" else "User"
    marks = {}
    for dim in DIMENSIONS:
        marks[dim] = criterion(dim, language)
        for x in json.loads(released(f"characterbench/{dim}_test.json").read_text()):
            source = x if language == "zh" else x["translation_en"]
            reply = source["response_messages"]["response"]
            by_reply.setdefault(reply, []).append((dim, source["dialogue"][-1]["utterance"], x[f"pred_{language}"]))

    def respond(body: dict) -> str:
        text = body["messages"][-1]["content"]
        hits = {pred for reply, found in by_reply.items() if f"：{reply}\n" in text + "\n"
                for dim, ask, pred in found if marks[dim] in text and f"{user}：{ask}\n" in text}
        assert len(hits) == 1, f"{len(hits)} released predictions fit a request"
        return f"{hits.pop():.1f}"

    return respond


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_released_predictions_give_the_release_s_pearson_and_scores(loopback, tmp_path, monkeypatch, language):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _released_judge(language)
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    files = [a for d in DIMENSIONS for a in ("--data", str(released(f"characterbench/{d}_test.json")))]
    out = tmp_path / "run"
    ran = rpbench("characterbench", "run", *files, "--language", language, "--judge-output", "number",
                  "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite"), "--out", str(out), "--resamples", "50")
    assert ran.returncode == 0, (ran.stdout + ran.stderr)
    # No reply was generated: every request is the judge's, and every released reply was judged once.
    from rpbench.tasks.modes.characterbench.release import judge_system

    assert all(b["messages"][0]["content"] == judge_system() for b in loopback.requests)
    assert len(loopback.requests) == 7 * 250
    expected = FIGURES["figures"][language]
    agreement = pq.read_table(out / "agreement.parquet").to_pylist()
    for dim in DIMENSIONS:
        for judge in ("openai/loopback", "CharacterJudge (released predictions)"):
            row = next(a for a in agreement if a["group"] == dim and a["judge"] == judge)
            assert row["n"] == 250 and row["pearson"] == pytest.approx(expected[dim]["pearson"], abs=1e-12), dim
    rows = pq.read_table(out / "item_scores.parquet").to_pylist()
    per_dim = {d: sum(r["scaled"] for r in rows if r["dimension"] == d) / 250 for d in DIMENSIONS}
    for dim in DIMENSIONS:
        assert per_dim[dim] == pytest.approx(expected[dim]["score"], abs=1e-12), dim
    assert sum(per_dim.values()) / 7 == pytest.approx(expected["average"], abs=1e-12)
    # Each released system under its own name on the leaderboard.
    board = json.loads((out / "manifest.json").read_text())["characterbench"]["leaderboard"]
    assert {"gpt", "claude3-opus", "minimax", "glm"} <= {r["model"] for r in board}


def _live(body: dict) -> str:
    if len(body["messages"]) == 1:  # the reply request: one user message, as the release sends it
        return json.dumps({"response": "（收起缆绳）墨点在船头打盹呢。"})
    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    top = fmt["schema"]["properties"]["score"]["maximum"]
    return json.dumps({"reasoning": "stays in character", "score": top - 1})


def test_a_live_run_asks_the_model_and_the_judge_sees_its_reply(loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _live
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    out = tmp_path / "run"
    files = [a for p in sorted(SAMPLES.glob("*.json")) for a in ("--data", str(p))]
    ran = rpbench("characterbench", "run", *files, "--model", "characterbench-player", "--models-file",
                  str(models), "--cache", str(tmp_path / "calls.sqlite"), "--out", str(out), "--resamples", "50")
    assert ran.returncode == 0, (ran.stdout + ran.stderr)
    actor = [b for b in loopback.requests if len(b["messages"]) == 1]
    judge = [b for b in loopback.requests if len(b["messages"]) == 2]
    assert len(actor) == len(judge) == 6
    prompt = actor[0]["messages"][0]["content"]
    # The release's layout: the greeting as the character's first turn after an empty user turn, user/assistant
    # lines (tests/test_characterbench_release.py compares the whole request with the release's).
    assert "user: \nassistant: （解开缆绳）要过江吗？坐稳了。\nuser: 师傅，你每天几点开始摆渡？" in prompt
    # as process.py reads a reply: its Chinese full stop made ASCII
    assert all("林渡：（收起缆绳）墨点在船头打盹呢." in b["messages"][1]["content"] for b in judge)
    scores = pq.read_table(out / "item_scores.parquet").to_pylist()
    assert {r["dimension"]: r["score"] for r in scores} == {"engagement": 4, "fact_accuracy": 3,
                                                            "memory_consistency": 3}
    # memory's highest human score in its file is 4: 3 / 4 x 5
    assert next(r["scaled"] for r in scores if r["dimension"] == "memory_consistency") == 3.75
    seen = len(loopback.requests)
    again = rpbench("characterbench", "run", *files, "--model", "characterbench-player", "--models-file",
                    str(models), "--cache", str(tmp_path / "calls.sqlite"), "--out", str(out), "--resamples", "50")
    assert again.returncode == 0 and len(loopback.requests) == seen
    # The items' human scores are of the released replies: the model's own replies have none, and the judge's
    # agreement with people is not made up from another reply's score.
    assert all(r["human"] is None and r["released_judge"] is None for r in scores)
    assert pq.read_table(out / "agreement.parquet").num_rows == 0
    assert "Not measured: the people's scores are of the released replies" in (out / "report.md").read_text()


def test_the_judge_s_input_labels_turns_by_position_and_carries_the_dimension_s_reference():
    from rpbench.tasks.modes.characterbench.judging import judge_input
    from rpbench.tasks.modes.characterbench.loader import load_items

    memory, = [i for i in load_items([str(SAMPLES / "memory_consistency_test.json")], ["zh"], 1)]
    text = judge_input(memory, "五点。")
    # memory: the dialogue segments as the reference, and no dialogue (the release leaves it out)
    assert "林渡：五点，天还没亮就出船。" in text and "师傅，你每天几点" not in text
    assert "用户：你刚才说几点出船来着？" in text and "林渡：五点。" in text and "JSON" not in text
    engagement, = load_items([str(SAMPLES / "engagement_test.json")], ["en"], 1)
    text = judge_input(engagement, "Sure.")
    assert "User：What time do you start ferrying each day?\nLin Du：Five." in text


@pytest.mark.parametrize(("output", "reply", "ok"), [
    ("number", "4", True), ("number", " 3.0\n", True), ("number", "Score: 4", False), ("number", "5", False),
    ("number", "0", False), ("number", "", False)])
def test_characterjudge_s_answer_is_read_strictly(output, reply, ok):
    from rpbench.tasks.llm.structured import score_alone

    read = score_alone(1, 4)
    if ok:
        assert 1 <= read(reply) <= 4
    else:
        with pytest.raises(ValueError):
            read(reply)


def test_an_unreadable_judgment_is_asked_again_then_counted_never_a_score(loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = lambda body: "I would say about four."
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    out = tmp_path / "run"
    ran = rpbench("characterbench", "run", "--data", str(SAMPLES / "engagement_test.json"), "--judge-output",
                  "number", "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite"), "--out", str(out), "--resamples", "50")
    assert len(loopback.requests) == 2 * 3  # each of the two released replies: asked three times
    failures = pq.read_table(out / "failures.parquet").to_pylist()
    assert [f["kind"] for f in failures] == ["judgment", "judgment"]
    assert all(r["score"] is None for r in pq.read_table(out / "item_scores.parquet").to_pylist())
    assert ran.returncode != 0


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d[1].pop("dialogue"), "engagement_test.json: record 1: field 'dialogue': missing or not a list"),
    (lambda d: d[0].update(annotation_score="high"), "record 0: field 'annotation_score': 'high' is not a number"),
    # A score above the scale would raise the divisor of the whole file (the file's highest human score).
    (lambda d: d[1].update(annotation_score=9), "record 1: field 'annotation_score': 9 is off engagement's scale (1-5)"),
    (lambda d: d[0]["dialogue"].append({"speaker": "character", "utterance": "hm"}),
     "record 0: field 'dialogue': must end with the user's turn"),
    (lambda d: d[1].update(id=d[0]["id"]), "field 'id': '1' appears more than once"),
    # With no --model the file's own replies are judged: one with no system would be a leaderboard row of none.
    (lambda d: d[1].pop("response_messages"), "record 1: field 'response_messages.model': missing (with no --model"),
])
def test_a_bad_record_is_one_line_naming_file_record_and_field(tmp_path, edit, message):
    data = json.loads((SAMPLES / "engagement_test.json").read_text())
    edit(data)
    bad = tmp_path / "engagement_test.json"
    bad.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    ran = rpbench("characterbench", "run", "--data", str(bad), "--out", str(tmp_path / "run"))
    assert ran.returncode == 2 and message in (ran.stdout + ran.stderr) and "Traceback" not in (ran.stdout + ran.stderr)


def test_a_file_not_named_by_its_dimension_is_refused(tmp_path):
    odd = tmp_path / "chats.json"
    odd.write_text((SAMPLES / "engagement_test.json").read_text(encoding="utf-8"), encoding="utf-8")
    ran = rpbench("characterbench", "run", "--data", str(odd), "--out", str(tmp_path / "run"))
    assert ran.returncode == 2 and "unknown dimension 'chats' (known: attribute_consistency_bot" in ran.stderr


def test_the_characterjudge_preset_binds_the_judge_greedy_and_answers_in_plain_numbers(loopback, tmp_path,
                                                                                        monkeypatch):
    from rpbench.tasks.llm.config import load_models_config

    spec = load_models_config("characterjudge", environ={}).for_role("characterbench-judge")
    assert (spec.model, spec.temperature, spec.max_tokens) == ("hosted_vllm/thu-coai/CharacterJudge", 0.0, 512)
    # The preset against the loopback server standing in for vLLM: the judge's bare numbers are its scores.
    monkeypatch.setenv("VLLM_API_KEY", "k")
    monkeypatch.setenv("RPBENCH_CHARACTERBENCH_JUDGE_API_BASE", loopback.base_url)
    loopback.responder = lambda body: "2"
    out = tmp_path / "run"
    ran = rpbench("characterbench", "run", "--data", str(SAMPLES / "fact_accuracy_test.json"), "--models-file",
                  "characterjudge", "--judge-output", "number", "--cache", str(tmp_path / "calls.sqlite"), "--out",
                  str(out), "--resamples", "50")
    assert ran.returncode == 0, (ran.stdout + ran.stderr)
    body = loopback.requests[0]
    assert body["model"] == "thu-coai/CharacterJudge" and body["temperature"] == 0.0 and body["max_tokens"] == 512
    assert [r["score"] for r in pq.read_table(out / "item_scores.parquet").to_pylist()] == [2.0, 2.0]
    assert not math.isnan(pq.read_table(out / "agreement.parquet").to_pylist()[0]["exact"])


def test_people_score_replies_per_dimension_in_label_studio_tasks(loopback, tmp_path, monkeypatch):
    import xml.etree.ElementTree as ET

    from rpbench.flows.kit.front.registry import annotation_kinds, load_ref

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    loopback.responder = lambda body: "3"
    out = tmp_path / "run"
    ran = rpbench("characterbench", "run", "--data", str(SAMPLES / "fact_accuracy_test.json"), "--judge-output",
                  "number", "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite"), "--out", str(out), "--resamples", "50")
    assert ran.returncode == 0, ran.stderr
    kind = load_ref(annotation_kinds()["characterbench"][1])
    tasks = kind.tasks(out, None, 0)
    assert sorted(t["model"] for t in tasks) == ["rpbench-sample-a", "rpbench-sample-b"]
    assert all(t["top"] == "4" and "墨点" in t["reference"] and t["criterion"] for t in tasks)
    for language in ("en", "zh"):
        config = ET.fromstring(kind.config(language))
        assert [c.get("alias") for c in config.iter("Choice")] == ["1", "2", "3", "4", "5", "unsure"]
    assert kind.read(tasks[0], [{"from_name": "reply_score", "value": {"choices": ["2"]}}])[1]["score"] == 2
    # 5 is not on fact accuracy's 1-4 scale: kept as unsure, never clipped to 4.
    assert kind.read(tasks[0], [{"from_name": "reply_score", "value": {"choices": ["5"]}}])[0] == "unsure"
    assert kind.read(tasks[0], [])[0] == "unsure"


def test_replies_given_as_a_file_are_judged_as_a_model_s(loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = lambda body: "2"
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    given = tmp_path / "mine.jsonl"
    given.write_text('{"id": "engagement:1", "answer": "（笑）那你可得坐稳了。"}\n', encoding="utf-8")
    out = tmp_path / "run"
    ran = rpbench("characterbench", "run", "--data", str(SAMPLES / "engagement_test.json"), "--answers", str(given),
                  "--judge-output", "number", "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite"), "--out", str(out), "--resamples", "50")
    assert "林渡：（笑）那你可得坐稳了。" in loopback.requests[0]["messages"][1]["content"]
    assert len(loopback.requests) == 1  # item 2 has no reply in the file: a counted failure, never judged
    failures = pq.read_table(out / "failures.parquet").to_pylist()
    assert [(f["model"], f["item_id"], f["kind"]) for f in failures] == [("mine", "engagement:2", "reply")]
    assert ran.returncode == 3  # one of two replies failed: past the run's failure bound
    bad = tmp_path / "typo.jsonl"
    bad.write_text('{"id": "engagement:9", "answer": "hm"}\n', encoding="utf-8")
    wrong = rpbench("characterbench", "run", "--data", str(SAMPLES / "engagement_test.json"), "--answers", str(bad),
                    "--out", str(tmp_path / "o"))
    assert wrong.returncode == 2 and "typo.jsonl: line 1: field 'id': 'engagement:9' is no item" in wrong.stderr


def test_a_live_run_on_a_few_released_items_of_every_dimension(loopback, tmp_path, monkeypatch):
    """Two items of each stored dimension, in English: the model replies, the judge sees that reply."""
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _live
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    files = [a for d in DIMENSIONS for a in ("--data", str(released(f"characterbench/{d}_test.json")))]
    out = tmp_path / "run"
    ran = rpbench("characterbench", "run", *files, "--language", "en", "--limit", "2", "--model",
                  "characterbench-player", "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite"), "--out", str(out), "--resamples", "50")
    assert ran.returncode == 0, ran.stderr[-2000:]
    judge = [b for b in loopback.requests if len(b["messages"]) == 2]
    assert len(judge) == 14 and all("：（收起缆绳）墨点在船头打盹呢." in b["messages"][1]["content"] for b in judge)
    rows = pq.read_table(out / "item_scores.parquet").to_pylist()
    assert sorted({r["dimension"] for r in rows}) == sorted(DIMENSIONS) and all(r["score"] for r in rows)


def test_a_run_works_out_its_judge_notes_once(loopback, tmp_path, monkeypatch):
    """Whether a judge scores its own model is said at the start, in the report and in the manifest: worked out
    once per run, not once per place that says it."""
    from rpbench.flows.modes.characterbench.settings import CharacterBenchSettings

    calls = []
    original = CharacterBenchSettings.judging
    monkeypatch.setattr(CharacterBenchSettings, "judging", lambda self: calls.append(1) or original(self))
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _live
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    ran = rpbench("characterbench", "run", "--data", str(SAMPLES / "engagement_test.json"), "--model",
                  "characterbench-player", "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite"), "--out", str(tmp_path / "run"),
                  "--resamples", "50")
    assert ran.returncode == 0, ran.stderr[-2000:]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert "scores its own answers" in manifest["self_judging"][0]
    assert len(calls) == 1  # once for the run: self-judging, embedded roles and replaced settings share it


def test_the_judge_against_annotators_pulled_from_label_studio(loopback, tmp_path, monkeypatch):
    """Scores people gave a run's replies (as `rpbench annotate pull` writes them) against the run's judge,
    through the same agreement piece."""
    from scipy import stats

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    judged = {"粗": 1, "细": 3}  # the stand-in judge: 1 for a reply of one system, 3 for the other's
    loopback.responder = lambda body: str(judged["粗" if "小白" in body["messages"][1]["content"]
                                                 or "中午" in body["messages"][1]["content"]
                                                 or "AI助手" in body["messages"][1]["content"] else "细"])
    out = tmp_path / "run"
    files = [a for p in sorted(SAMPLES.glob("*.json")) for a in ("--data", str(p))]
    ran = rpbench("characterbench", "run", *files, "--judge-output", "number", "--models-file", str(models),
                  "--cache", str(tmp_path / "calls.sqlite"), "--out", str(out), "--resamples", "50")
    assert ran.returncode == 0, ran.stderr[-2000:]
    rows = pq.read_table(out / "item_scores.parquet").to_pylist()
    people = {("memory_consistency:1", "rpbench-sample-a"): 4, ("memory_consistency:2", "rpbench-sample-b"): 1,
              ("engagement:1", "rpbench-sample-a"): 3, ("engagement:2", "rpbench-sample-b"): 2,
              ("fact_accuracy:1", "rpbench-sample-a"): 4, ("fact_accuracy:2", "rpbench-sample-b"): 2}
    pulled = tmp_path / "labels.jsonl"
    pulled.write_text("".join(json.dumps({"item_id": i, "model": m, "language": "zh", "score": s, "annotator": "a"})
                              + "\n" for (i, m), s in people.items()), encoding="utf-8")
    agreed = rpbench("annotate", "agreement", "--annotations", str(pulled), "--run", str(out), "--resamples", "50")
    assert agreed.returncode == 0, agreed.stderr
    found = pq.read_table(out / "agreement_annotators.parquet").to_pylist()
    assert {a["group"] for a in found} == {"memory_consistency", "engagement", "fact_accuracy"}
    mine = {(r["item_id"], r["model"]): r["score"] for r in rows}
    memory = [k for k in people if k[0].startswith("memory")]
    row = next(a for a in found if a["group"] == "memory_consistency")
    assert row["n"] == 2 and row["exact"] == sum(people[k] == mine[k] for k in memory) / 2
    assert row["pearson"] == pytest.approx(stats.pearsonr([people[k] for k in memory], [mine[k] for k in memory])[0])
    other = tmp_path / "other.jsonl"
    other.write_text('{"item_id": "engagement:9", "model": "x", "language": "zh", "score": 2}\n', encoding="utf-8")
    none = rpbench("annotate", "agreement", "--annotations", str(other), "--run", str(out))
    assert none.returncode == 2 and "no annotated reply is one" in none.stderr
    # An annotation of a reply the run lacks is left out and said so; a second score of one reply by one
    # annotator and a score that is no finite number are errors (both were counted: twice, or as NaN).
    with pulled.open("a", encoding="utf-8") as f:
        f.write(other.read_text(encoding="utf-8"))
    some = rpbench("annotate", "agreement", "--annotations", str(pulled), "--run", str(out), "--resamples", "50")
    assert some.returncode == 0 and "note: annotations left out: 1 of replies the run does not have (first: " \
        "engagement:9/zh/x)" in some.stderr
    assert pq.read_table(out / "agreement_annotators.parquet").to_pylist() == found
    for bad, said in [({"score": 5}, "record 7: field 'score': annotator 'a' already scored this reply in record 0"),
                      ({"score": "nan"}, "record 7: field 'score': 'nan' is not a finite number")]:
        twice = tmp_path / "twice.jsonl"
        first = json.loads(pulled.read_text(encoding="utf-8").splitlines()[0])
        twice.write_text(pulled.read_text(encoding="utf-8") + json.dumps({**first, **bad}) + "\n", encoding="utf-8")
        refused = rpbench("annotate", "agreement", "--annotations", str(twice), "--run", str(out))
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr


def test_people_s_scores_count_only_for_the_reply_they_scored(loopback, tmp_path, monkeypatch):
    """Three systems answer one item: one with the released reply's text under two names, one with a reply of
    its own. The human score is compared with the judge's scores of the released text only, and the released
    prediction is counted once for it, however many systems sent it."""
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = lambda body: "3"
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    items = json.loads((SAMPLES / "engagement_test.json").read_text())
    items[0]["pred_zh"] = 3  # as if CharacterJudge's prediction were released with the item
    data = tmp_path / "engagement_test.json"
    data.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    released_text = items[0]["response_messages"]["response"]
    answers = []
    for name, text in (("same", released_text), ("twin", released_text), ("own", "（摆摆手）今天不开船。")):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(json.dumps({"id": "engagement:1", "answer": text}, ensure_ascii=False) + "\n",
                        encoding="utf-8")
        answers += ["--answers", str(path)]
    out = tmp_path / "run"
    rpbench("characterbench", "run", "--data", str(data), *answers, "--limit", "1",
            "--judge-output", "number", "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite"),
            "--out", str(out), "--resamples", "40")
    scores = {r["model"]: r for r in pq.read_table(out / "item_scores.parquet").to_pylist()}
    assert scores["same"]["human"] == scores["twin"]["human"] == 4 and scores["own"]["human"] is None
    agreement = {a["judge"]: a for a in pq.read_table(out / "agreement.parquet").to_pylist()}
    assert agreement["openai/loopback"]["n"] == 2  # same and twin; never own's reply against the released score
    assert agreement["CharacterJudge (released predictions)"]["n"] == 1  # one reply, one prediction


def test_judge_released_checks_the_judge_against_people_beside_a_live_run(loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _live
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    out = tmp_path / "run"
    data = ["--data", str(SAMPLES / "engagement_test.json")]
    ran = rpbench("characterbench", "run", *data, "--model", "characterbench-player", "--judge-released",
                  "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite"), "--out", str(out),
                  "--resamples", "40")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    board = {r["model"] for r in pq.read_table(out / "leaderboard.parquet").to_pylist()}
    assert board == {"characterbench-player", "rpbench-sample-a", "rpbench-sample-b"}
    agreement = pq.read_table(out / "agreement.parquet").to_pylist()
    assert [(a["judge"], a["group"], a["n"]) for a in agreement] == [("openai/loopback", "engagement", 2)]
    # A name that is a released system's would put two systems' replies under one name: refused.
    given = tmp_path / "mine.jsonl"
    given.write_text('{"id": "engagement:1", "answer": "嗯。"}\n', encoding="utf-8")
    clash = rpbench("characterbench", "run", *data, "--answers", f"rpbench-sample-a={given}", "--judge-released",
                    "--models-file", str(models), "--out", str(tmp_path / "o"))
    assert clash.returncode == 2
    assert "--answers: 'rpbench-sample-a' is the name of a released system in this run" in clash.stderr


def test_files_with_no_human_scores_say_so_rather_than_asking_for_judge_released(loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = lambda body: "3"
    items = json.loads((SAMPLES / "engagement_test.json").read_text())
    for x in items:  # the human score, under either name the release gives it
        x.pop("annotation_score", None)
        x.pop("gold", None)
    data = tmp_path / "engagement_test.json"
    data.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "run"
    ran = rpbench("characterbench", "run", "--data", str(data), "--judge-output", "number", "--models-file",
                  str(loopback_models_file(tmp_path / "models.toml", loopback)), "--cache",
                  str(tmp_path / "calls.sqlite"), "--out", str(out), "--resamples", "40")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Not measured: the files carry no human scores." in (out / "report.md").read_text()


def test_a_folder_stands_for_the_dimension_files_in_it(tmp_path):
    from rpbench.tasks.core.errors import InputError
    from rpbench.tasks.modes.characterbench.loader import load_items

    folder = tmp_path / "characterbench"
    folder.mkdir()
    for name in ("engagement_test.json", "memory_consistency_test.json"):
        (folder / name).write_text((SAMPLES / name).read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "README.json").write_text("{}", encoding="utf-8")  # not a dimension: not read
    from_folder = load_items([str(folder)], ["en"], limit=2)
    from_files = load_items([str(folder / "engagement_test.json"), str(folder / "memory_consistency_test.json")],
                            ["en"], limit=2)
    assert from_folder == from_files and {i.dimension for i in from_folder} == {"engagement", "memory_consistency"}
    with pytest.raises(InputError, match="a second file for dimension engagement"):
        load_items([str(folder), str(folder / "engagement_test.json")], ["en"])
    # A misspelt dimension file in the folder is named, not skipped (its whole dimension would go unscored).
    (folder / "engagment_test.json").write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match=re.escape("engagment_test.json: the file's name must say its dimension, "
                                                   "as the release names them (<dimension>_test.json): unknown "
                                                   "dimension 'engagment' (did you mean 'engagement'")):
        load_items([str(folder)], ["en"])
    (tmp_path / "empty").mkdir()
    ran = rpbench("characterbench", "run", "--data", str(tmp_path / "empty"), "--out", str(tmp_path / "run"))
    assert ran.returncode == 2 and "empty: no CharacterBench files in this folder (named <dimension>_test.json" in ran.stderr
