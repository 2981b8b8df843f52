"""The arena: win rates and Bradley-Terry Elo from battles, against RPBench-Auto's own calculate_metrics.py, and
`rpbench leaderboard` over several runs."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from tests.helpers import TEST_KEY_ENV, rpbench
from tests.release_code import imported, release_folder
from tests.test_rpbench_auto_release import COMMIT, responder

pytestmark = pytest.mark.usefixtures("harness")


def _models(tmp_path: Path, loopback, baseline: str = "loop-base") -> str:
    path = tmp_path / f"models-{baseline}.toml"
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\n'
                    f'api_key_env = "{TEST_KEY_ENV}"\ntimeout = 20\n'
                    f'[roles.rpbench-auto-baseline]\nmodel = "openai/{baseline}"\n'
                    '[roles.rpbench-auto-judge]\nmodel = "openai/loop-judge"\n', encoding="utf-8")
    return str(path)


def _run(tmp_path: Path, loopback, name: str, models: list[str], limit: int = 3, baseline: str = "loop-base"):
    args = [a for m in models for a in ("--model", m)]
    return rpbench("rpbench-auto", "run", *args, "--limit", str(limit), "--models-file",
                   _models(tmp_path, loopback, baseline), "--cache", str(tmp_path / "c.sqlite"), "--out",
                   str(tmp_path / name), "--resamples", "40")


def _release_results(rounds, folder: Path) -> None:
    """The rounds as the release's results/<subset>/eval_*.jsonl lines (what get_metrics reads)."""
    folder.mkdir(parents=True)
    with (folder / "eval_rpbench.jsonl").open("w") as f:
        for r in rounds:
            f.write(json.dumps({"assignment": {"model_a": r.model_a, "model_b": r.model_b},
                                "judger_response": r.judge_reply}) + "\n")


def test_win_rates_and_elo_equal_calculate_metrics(loopback, tmp_path, monkeypatch):
    """calculate_metrics.get_metrics on the judge replies rpbench recorded gives rpbench's win rates to 1e-6, and
    its EloCalculator.compute_mle_elo (scikit-learn's fit) on the battles gives rpbench's Elo to 0.01.

    get_metrics writes each match as (winner, loser, winner), so its own MLE fit sees one class and
    scikit-learn refuses it; the release's leaderboard takes its win rates with the online algorithm, as here, and
    the MLE fit is run on the battles as judged (slot A, slot B, winner), the same model."""
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.rpbench_auto.tables import ROUNDS
    from rpbench.tasks.reports.arena import BATTLES, fit_battles, win_rate
    from rpbench.tasks.stats.bradley_terry import fit_elo

    folder = release_folder("boson-ai/RPBench-Auto", COMMIT)
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = responder()
    ran = _run(tmp_path, loopback, "run", ["openai/loop-a", "openai/loop-b"], limit=4)
    assert ran.returncode == 0, ran.stderr[-2000:]
    rounds = read_records(tmp_path / "run" / "rounds.parquet", ROUNDS)
    battles = read_records(tmp_path / "run" / "battles.parquet", BATTLES)
    assert len(battles) == len(rounds) > 20 and any(b.outcome == "none" for b in battles)
    with imported(folder, ["calculate_metrics"]) as (metrics,):
        for subset in ("character", "scene"):
            mine = [r for r in rounds if r.subset == subset]
            _release_results(mine, tmp_path / "release" / subset)
            _, matrix, names = metrics.get_metrics(str(tmp_path / "release" / subset), elo_algo="online")
            picked = [b for b in battles if b.subset == subset]
            ours = fit_elo(fit_battles(picked))
            baseline = picked[0].baseline  # the battles name the baseline by its model, the rounds by its role
            for i, model in enumerate(names):
                j = names.index(mine[0].baseline)
                if model == mine[0].baseline:
                    continue
                _, _, rate = win_rate(picked, model, baseline)
                assert rate is not None and abs(rate - matrix[i, j]) < 1e-6
            assert len(names) == 3
            # and compute_mle_elo itself, on the battles' own triples
            triples = [(b.model_a, b.model_b, b.winner) for b in picked if b.outcome != "none"]
            direct = metrics.EloCalculator().compute_mle_elo(triples)
            assert set(direct) == set(ours) and all(abs(direct[m] - ours[m]) < 0.01 for m in ours), (direct, ours)


def test_intervals_hold_the_point_and_narrow_with_more_battles():
    from rpbench.tasks.stats.bradley_terry import Battle, elo_intervals, fit_elo

    strength = {"a": 0.0, "b": 0.6, "c": -0.4}

    def battles(dialogues: int) -> list[Battle]:
        rng = random.Random(3)
        out = []
        for d in range(dialogues):
            for _ in range(5):
                x, y = rng.sample(sorted(strength), 2)
                p = 1 / (1 + math.exp(strength[y] - strength[x]))
                out.append(Battle(x, y, 1.0 if rng.random() < p else 0.0, d))
        return out

    few, many = battles(30), battles(240)
    widths = []
    for sample in (few, many):
        point, bands = fit_elo(sample), elo_intervals(sample, 200, seed=1)
        assert all(bands[m][0] <= point[m] <= bands[m][1] for m in point)
        assert abs(sum(point.values()) / len(point) - 1000) < 1e-6  # centred on 1000, as the release's fit
        widths.append(sum(bands[m][1] - bands[m][0] for m in point))
        assert elo_intervals(sample, 200, seed=1) == bands  # seeded: the same interval twice
    assert widths[1] < widths[0] / 1.8
    assert fit_elo(many)["b"] > fit_elo(many)["a"] > fit_elo(many)["c"]


def test_a_leaderboard_over_runs_is_one_fit_over_their_battles(loopback, tmp_path, monkeypatch):
    from rpbench.storage.tables import read_records
    from rpbench.tasks.reports.arena import ARENA, BATTLES, arena_rows

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = responder()
    for k in range(4):
        ran = _run(tmp_path, loopback, f"runs/m{k}", [f"openai/loop-m{k}"], limit=2)
        assert ran.returncode == 0, ran.stderr[-2000:]
    made = rpbench("leaderboard", str(tmp_path / "runs" / "m[012]"), "--out", str(tmp_path / "board3"),
                   "--resamples", "100")
    assert made.returncode == 0, made.stderr[-2000:]
    board = read_records(tmp_path / "board3" / "leaderboard.parquet", ARENA)
    battles = [b.model_copy(update={"run": str(tmp_path / "runs" / f"m{k}")}) for k in range(3)
               for b in read_records(tmp_path / "runs" / f"m{k}" / "battles.parquet", BATTLES)]
    assert [r for r in board if not r.released] == arena_rows(battles, 100, 0)
    assert {r.model for r in board if r.released} >= {"Character.AI", "Claude-3.5 Sonnet (2024-06-20)"}
    assert "Elo" in made.stdout and (tmp_path / "board3" / "leaderboard.html").is_file()
    # A fourth run is added with no call at all.
    loopback.reset()
    added = rpbench("leaderboard", str(tmp_path / "runs"), "--out", str(tmp_path / "board4"), "--resamples", "100")
    assert added.returncode == 0, added.stderr[-2000:]
    assert loopback.requests == []
    four = {r.model for r in read_records(tmp_path / "board4" / "leaderboard.parquet", ARENA) if not r.released}
    assert four == {"openai/loop-m0", "openai/loop-m1", "openai/loop-m2", "openai/loop-m3", "openai/loop-base"}
    # A run against another baseline is refused in one line, naming both.
    loopback.responder = responder()
    other = _run(tmp_path, loopback, "other", ["openai/loop-x"], limit=1, baseline="loop-other-base")
    assert other.returncode == 0, other.stderr[-2000:]
    refused = rpbench("leaderboard", str(tmp_path / "runs" / "m0"), str(tmp_path / "other"), "--out",
                      str(tmp_path / "board5"))
    assert refused.returncode == 2
    line = refused.stderr.strip()
    assert "\n" not in line and "baselines" in line and "loop-other-base" in line and "loop-base" in line
    assert not (tmp_path / "board5" / "leaderboard.parquet").exists()
    # The same model in two runs would count twice.
    twice = rpbench("leaderboard", str(tmp_path / "runs" / "m0"), str(tmp_path / "runs" / "m0" / "."), "--out",
                    str(tmp_path / "board6"))
    assert twice.returncode == 0  # one folder named twice is one run
