"""RPBench-Auto's mode on the loopback server: counts by hand, bad input, unreadable judges, reruns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rpbench.samples import sample_path
from tests.helpers import TEST_KEY_ENV, rpbench
from tests.test_rpbench_auto_release import responder

pytestmark = pytest.mark.usefixtures("harness")
CHARACTERS = sample_path("rpbench-auto", "characters.jsonl")
SCENES = sample_path("rpbench-auto", "scenes.jsonl")


def _models(tmp_path: Path, loopback) -> str:
    path = tmp_path / "models.toml"
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\n'
                    f'api_key_env = "{TEST_KEY_ENV}"\ntimeout = 20\n[retry]\ntransient_attempts = 1\n'
                    '[roles.rpbench-auto-baseline]\nmodel = "openai/loop-base"\n'
                    '[roles.rpbench-auto-judge]\nmodel = "openai/loop-judge"\n', encoding="utf-8")
    return str(path)


def _run(tmp_path: Path, loopback, out: str, *more: str, models: tuple[str, ...] = ("openai/loop-cand",)):
    args = [a for m in models for a in ("--model", m)]
    return rpbench("rpbench-auto", "run", "--character-data", str(CHARACTERS), "--scene-data", str(SCENES), *args,
                   "--models-file", _models(tmp_path, loopback), "--cache", str(tmp_path / "c.sqlite"),
                   "--out", str(tmp_path / out), "--resamples", "40", *more)


def _records(folder: Path, table: str):
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.rpbench_auto import tables

    return read_records(folder / f"{table}.parquet", getattr(tables, table.upper()))


def test_win_rates_are_counts_and_a_rerun_sends_nothing(loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = responder(reask=True)
    ran = _run(tmp_path, loopback, "run")
    assert ran.returncode == 0, ran.stderr[-2000:]
    rounds = _records(tmp_path / "run", "rounds")
    assert sum(e.judge_asks for e in _records(tmp_path / "run", "dialogue_ends")) > 0  # some asked again
    board = json.loads((tmp_path / "run" / "manifest.json").read_text())["rpbench_auto"]["leaderboard"]
    row = next(r for r in board if r["model"] == "openai/loop-cand")
    decisive = [r for r in rounds if r.outcome != "none"]
    won = [r for r in decisive if (r.model_a if r.outcome == "model_a" else r.model_b) == "openai/loop-cand"]
    assert row["win rate"] == pytest.approx(100 * len(won) / len(decisive))
    assert row["n"] == len(decisive) and row["no_winner"] == len(rounds) - len(decisive)
    for subset in ("character", "scene"):
        mine = [r for r in decisive if r.subset == subset]
        assert row[subset] == pytest.approx(100 * sum(r.win for r in mine) / len(mine))
    # The candidate's history carries the reply of slot A when A won, else slot B's (a round with no winner too).
    assert len({(r.item_id, r.round) for r in rounds}) == len(rounds) and max(r.round for r in rounds) == 5
    assert "Arena: win rate and Elo against the baseline" in (tmp_path / "run" / "report.md").read_text()
    assert (tmp_path / "run" / "arena.parquet").is_file() and (tmp_path / "run" / "battles.parquet").is_file()
    _check_viewer(tmp_path / "run", rounds)
    first = (tmp_path / "run" / "rounds.parquet").read_bytes()
    loopback.reset()
    again = _run(tmp_path, loopback, "run")
    assert again.returncode == 0 and loopback.requests == []
    # The same inputs and seed give the same rounds into a new folder, with no call either.
    same = _run(tmp_path, loopback, "same")
    assert same.returncode == 0 and loopback.requests == []
    assert [r.model_dump() for r in _records(tmp_path / "same", "rounds")] == [r.model_dump() for r in rounds]
    assert first == (tmp_path / "run" / "rounds.parquet").read_bytes()
    # Another seed draws the slots otherwise.
    loopback.responder = responder(reask=True)
    other = _run(tmp_path, loopback, "other", "--seed", "5")
    assert other.returncode == 0
    assert [r.model_a for r in _records(tmp_path / "other", "rounds")] != [r.model_a for r in rounds]


def _check_viewer(folder: Path, rounds) -> None:
    """One sample per dialogue; each round the user's turn, then both replies side by side in the slots the judge
    saw them in, the winner's marked, then the judge's verdict; its score line the candidate's wins counted."""
    from rpbench.tasks.reports.viewer import read_viewer

    samples = {s["id"]: s for s in read_viewer(folder / "viewer.html")["samples"]}
    assert set(samples) == {f"{r.model}/{r.dialogue_id}" for r in rounds}
    for r in rounds:
        parts = samples[f"{r.model}/{r.dialogue_id}"]["parts"]
        at = next(i for i, p in enumerate(parts) if p["label"] == f"user, round {r.round}")
        user, a, b, judge = parts[at:at + 4]
        assert user["text"] == r.user and (a["kind"], b["kind"]) == ("pair", "pair")
        assert (a["text"], b["text"]) == (r.reply_a, r.reply_b)
        assert a["label"].startswith(f"A: {r.model_a} (") and b["label"].startswith(f"B: {r.model_b} (")
        assert (a["label"].endswith(" - won"), b["label"].endswith(" - won")) == (r.outcome == "model_a",
                                                                                   r.outcome == "model_b")
        assert judge["kind"] == "note" and judge["label"] == f"judge, round {r.round}"
    for key, s in samples.items():
        mine = [r for r in rounds if f"{r.model}/{r.dialogue_id}" == key]
        assert s["score"].startswith(f"won {sum(r.win == 1 for r in mine)} of "
                                     f"{sum(r.win is not None for r in mine)} rounds")


def test_an_unreadable_judge_is_asked_again_then_a_counted_failure_never_a_winner(loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = lambda body: ("I prefer the first one." if body["model"].endswith("loop-judge")
                                       else "*nods* Yes.")
    ran = _run(tmp_path, loopback, "run", "--judge-asks", "3", "--subset", "character")
    assert ran.returncode == 3, ran.stdout[-2000:]
    judge_calls = [r for r in loopback.requests if r["model"].endswith("loop-judge")]
    assert len(judge_calls) == 2 * 3  # two characters, each opening asked three times, then given up
    ends = _records(tmp_path / "run", "dialogue_ends")
    assert [e.status for e in ends] == ["failed", "failed"] and all("judge, opening" in e.error for e in ends)
    assert _records(tmp_path / "run", "rounds") == []
    assert "failed" in ran.stderr
    from rpbench.tasks.reports.viewer import read_viewer

    # The viewer still shows each dialogue, and why it has no round.
    shown = read_viewer(tmp_path / "run" / "viewer.html")["samples"]
    assert len(shown) == 2 and all(s["score"] == "no round judged" for s in shown)
    assert all(s["parts"][0]["text"].startswith("failed after 0 rounds: ") for s in shown)


@pytest.mark.parametrize(("args", "says"), [
    (("--baseline", "no-such-role"), "--baseline"),
    (("--subset", "scenes"), "--subset: no subset 'scenes'"),
    (("--answers", "x=samples.jsonl"), "--answers"),
])
def test_bad_options_are_one_line(loopback, tmp_path, monkeypatch, args, says):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    ran = _run(tmp_path, loopback, "run", *args)
    assert ran.returncode == 2
    line = ran.stderr.strip()
    assert says in line and "\n" not in line and "Traceback" not in ran.stderr
    assert loopback.requests == [] and not (tmp_path / "run" / "rounds.parquet").exists()


@pytest.mark.parametrize(("edit", "field"), [
    (lambda r: r.pop("npc_profile"), "field 'npc_profile': missing"),
    (lambda r: r["npc_profile"].pop("title"), "field 'npc_profile.title': missing"),
    (lambda r: r.update(conversation=[{"sentences": "hello"}]), "field 'conversation.0.sentences'"),
])
def test_a_bad_data_line_names_file_line_and_field(loopback, tmp_path, monkeypatch, edit, field):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    lines = CHARACTERS.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    edit(record)
    bad = tmp_path / "characters.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(record)]) + "\n", encoding="utf-8")
    ran = rpbench("rpbench-auto", "run", "--character-data", str(bad), "--subset", "character", "--model",
                  "openai/loop-cand", "--models-file", _models(tmp_path, loopback), "--out", str(tmp_path / "run"))
    assert ran.returncode == 2
    line = ran.stderr.strip()
    assert f"{bad}: line 2: {field}" in line and "\n" not in line, line
    assert loopback.requests == [] and not (tmp_path / "run" / "manifest.json").exists()
