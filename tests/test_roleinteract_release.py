"""RoleInteract: what rpbench sends equals what SocialBench's own code builds, prompt for prompt, and its
``--scoring released`` scores every answer as SocialBench's ``compute_score`` does.

The release's ``dataset.py`` (X-PLUG/SocialBench at 1287b67, from ../shared/releases) runs here: its
``SocialBenchDataset`` builds each item's prompt, its ``compute_score`` scores each answer. rpbench runs the same
items against the loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers import TEST_KEY_ENV, loopback_models_file, released, rpbench
from tests.release_code import imported, release_folder

pytestmark = pytest.mark.usefixtures("harness")
SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "roleinteract" / "example.json"


def _dataset_module():
    return imported(release_folder("X-PLUG/SocialBench", "1287b67034f6c76c4b3b068c51a3a9300f85ee0a"), ["dataset"])


def release_prompts(path: Path) -> list[str]:
    """The prompt SocialBench's SocialBenchDataset builds for each item of ``path``, in file order."""
    with _dataset_module() as (dataset,):
        return [d["prompt"] for d in dataset.SocialBenchDataset(str(path))]


def released_layout(path: Path, into: Path) -> Path:
    """``path``'s items with every utterance as the released files write it, ``{"from", "value"}`` (the release's
    code reads no other; the sample's memory items use the paper's one-key form)."""
    items = json.loads(path.read_text(encoding="utf-8"))
    for item in items:
        item["dialogue"] = [u if "from" in u else {"from": next(iter(u)), "value": next(iter(u.values()))}
                            for u in item["dialogue"]]
    into.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return into


def _run(tmp_path: Path, loopback, data: Path, *more: str) -> list[str]:
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    ran = rpbench("roleinteract", "run", "--data", str(data), "--model", "roleinteract-player", "--out",
                  str(tmp_path / "ri"), "--models-file", str(models), "--cache", str(tmp_path / "c.sqlite"),
                  "--resamples", "40", *more)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert all(len(b["messages"]) == 1 and b["messages"][0]["role"] == "user" for b in loopback.requests)
    return [b["messages"][0]["content"] for b in loopback.requests]


def test_every_category_s_prompt_is_socialbench_s(loopback, tmp_path, monkeypatch):
    """The shipped sample holds every category in both languages: each prompt sent is the release's, whole."""
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = lambda body: "B"
    data = released_layout(SAMPLE, tmp_path / "example.json")
    sent = _run(tmp_path, loopback, data)
    theirs = release_prompts(data)
    assert len(sent) == len(theirs) == 21  # one reply each: the release asks once
    assert sorted(sent) == sorted(theirs)


def test_the_released_emotion_items_are_sent_as_socialbench_sends_them(loopback, tmp_path, monkeypatch):
    """SocialBench's released emotional_perception.json (its control characters kept as the file holds them, as
    the release sends them): the first 40 items of each column and language, prompt for prompt."""
    from rpbench.tasks.modes.roleinteract.selection import select

    data = released("socialbench/emotional_perception.json")
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = lambda body: "A"
    sent = _run(tmp_path, loopback, data, "--limit", "40", "--drop-unanswerable")
    chosen = select([str(data)], [], [], 40, True)[0]
    theirs = release_prompts(data)
    assert len(sent) == len(chosen) > 100
    assert sorted(sent) == sorted(theirs[i.index] for i in chosen)
    # The emotion prompts' own words reach the requests in both languages.
    with _dataset_module() as (dataset,):
        for name in ("PROMPT_DIALOGUE_EMOTION_EN", "PROMPT_DIALOGUE_EMOTION_ZH"):
            runs = [r for r in getattr(dataset, name).split("{") if len(r.split("}")[-1].strip()) >= 8]
            assert runs and all(any(r.split("}")[-1] in text for text in sent) for r in runs), name


REPLIES = ["B", "A good choice is D.", "(b)", "答案：C", "I choose A and C", "I would not choose A; B it is",
           "a", "Option E", "AB", "The answer is B.", "no idea", "C, because the speaker is calm"]


def test_released_scoring_reads_and_scores_every_answer_as_compute_score_does(tmp_path):
    """Answers of many shapes on every sample item: under --scoring released each item scores what the release's
    compute_score gives it (x100), and an item it skips (None) is left out of the averages."""
    items = json.loads(SAMPLE.read_text(encoding="utf-8"))
    answers = tmp_path / "answers.jsonl"
    given = {f"example:{n:05d}": REPLIES[n % len(REPLIES)] if x.get("choices") else "I remember the lighthouse lamp"
             for n, x in enumerate(items)}
    answers.write_text("".join(json.dumps({"id": k, "answer": v}, ensure_ascii=False) + "\n"
                               for k, v in given.items()), encoding="utf-8")
    ran = rpbench("roleinteract", "run", "--data", str(SAMPLE), "--answers", f"shapes={answers}", "--scoring",
                  "released", "--out", str(tmp_path / "ri"), "--resamples", "40")
    assert ran.returncode == 0, ran.stderr[-2000:]
    ours = {r["item_id"]: r["score"] for r in pq.read_table(tmp_path / "ri" / "item_scores.parquet").to_pylist()}
    with _dataset_module() as (dataset,):
        theirs = {f"example:{n:05d}": dataset.compute_score(given[f"example:{n:05d}"], x["label"], x["meta"]["category"])
                  for n, x in enumerate(items)}
    assert set(ours) == set(theirs)
    for key, score in theirs.items():
        assert ours[key] == (None if score is None else pytest.approx(100 * score)), (key, given[key])
    assert any(v is None for v in theirs.values()) and any(v == 0 for v in theirs.values())
    # Under the paper's rule the same answers read otherwise (rpbench's own letter reader): "(b)" is B.
    paper = rpbench("roleinteract", "run", "--data", str(SAMPLE), "--answers", f"shapes={answers}",
                    "--out", str(tmp_path / "paper"), "--resamples", "40")
    assert paper.returncode == 0
    rows = {r["item_id"]: r for r in pq.read_table(tmp_path / "paper" / "item_scores.parquet").to_pylist()}
    b = next(k for k, v in given.items() if v == "(b)")
    assert theirs[b] is None and rows[b]["status"] == "scored"


def test_an_altered_prompt_fails_the_comparison(tmp_path, monkeypatch):
    from rpbench.tasks.modes.roleinteract import release
    from rpbench.tasks.modes.roleinteract.answering import prompt_text
    from rpbench.tasks.modes.roleinteract.loader import load_files

    data = released_layout(SAMPLE, tmp_path / "example.json")
    items = load_files([str(data)])[0]
    theirs = release_prompts(data)
    assert [prompt_text(i) for i in items] == theirs
    original = release.prompt
    monkeypatch.setattr(release, "prompt", lambda name, lang: original(name, lang).replace("==", "= =", 1))
    assert [prompt_text(i) for i in items] != theirs
