"""The README's demo, for real: the whole pipeline on the embedded local model (the suite's longest test)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rpbench.storage.tables import read_rows
from rpbench.tasks.modes.furina.evaluation.scoring import MAX_F, item_score
from rpbench.tasks.modes.furina.tables import ITEMS, SCENES
from tests.helpers import CLI, rpbench

pytestmark = pytest.mark.local_model
ROOT = Path(__file__).resolve().parent.parent


def test_demo_runs_end_to_end_on_the_local_model(tmp_path):
    out = tmp_path / "demo"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}
    proc = subprocess.run(
        [*CLI, "demo", "--out", str(out), "--cache", str(tmp_path / "calls.sqlite")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=3000,
    )
    output = proc.stdout + proc.stderr
    # What said why first (Prefect's own log can fill the tail with events it could not deliver), then the tail.
    said = [ln for ln in output.splitlines() if ln.startswith(("error", "run failed", "failed", "interrupted"))
            or "Traceback" in ln or ("| ERROR" in ln and "EventsWorker" not in ln)]
    assert proc.returncode == 0, "\n".join(said[:40]) + "\n...\n" + output[-3000:]
    at = output.find("Traceback")
    assert at < 0, output[max(0, at - 1500): at + 4000]
    assert len(read_rows(out / "pool" / SCENES.filename, SCENES)) >= 1  # the local model made at least one scene
    assert (out / "bench" / ITEMS.filename).is_file() and (out / "bench" / "items_per_dimension.png").is_file()
    report = (out / "eval" / "report.html").read_text(encoding="utf-8")
    assert "local-greedy" in report and "local-sampled" in report
    # Every role of the demo is the embedded model: its judge scores its own answers, and the manifest says so.
    judging = json.loads((out / "eval" / "manifest.json").read_text())["self_judging"]
    assert any("local-greedy" in line and "local/smollm2-135m" in line for line in judging), judging
    assert f"Report: {out}/eval/report.html  Every reply: {out}/eval/viewer.html" in proc.stdout
    assert (out / "eval" / "viewer.html").is_file()
    assert "Open it in a browser: file://" in proc.stdout
    _check_coverage(out)
    _check_arithmetic(out / "eval")
    _check_arena(out / "eval")
    # The finished runs moved elsewhere still work: the evaluation finds its benchmark from its manifest.
    moved = tmp_path / "moved" / "runs"
    shutil.move(out, moved)
    pushed = rpbench("annotate", "push", "--eval", str(moved / "eval"), "--task", "pairwise", "--dry-run")
    assert pushed.returncode == 0 and " pairwise tasks from " in pushed.stdout, pushed.stderr


def _check_arena(eval_dir: Path) -> None:
    """A Bradley-Terry table over the demo's models against the base, from the very judgments its report counts:
    two battles per judged item, and each model's slot-A share the position table's."""
    scores = pq.read_table(eval_dir / "item_scores.parquet").to_pylist()
    battles = pq.read_table(eval_dir / "battles.parquet").to_pylist()
    arena = {r["model"]: r for r in pq.read_table(eval_dir / "arena.parquet").to_pylist()
             if r["subset"] == "all" and r["language"] == "all"}
    board = {r["model"]: r for r in pq.read_table(eval_dir / "leaderboard.parquet").to_pylist()}
    judged = [s for s in scores if s["sigma1"] is not None and s["sigma2"] is not None]
    assert len(battles) == 2 * len(judged) > 0
    assert set(arena) == {*board, battles[0]["baseline"]} and {"local-greedy", "local-sampled"} <= set(arena)
    for model, row in board.items():
        assert arena[model]["elo"] is not None
        if row.get("slot_a_share") is not None:
            assert arena[model]["slot_a_share"] == pytest.approx(row["slot_a_share"])
    assert "Arena: Bradley-Terry over both orders" in (eval_dir / "report.md").read_text(encoding="utf-8")


def _check_coverage(out: Path) -> None:
    """Items in at least 3 of the 5 dimensions for each starter character (the demo's promise)."""
    items = pq.read_table(out / "bench" / ITEMS.filename).to_pylist()
    dims: dict[str, set[str]] = {}
    for it in items:
        dims.setdefault(it["character"], set()).add(it["dimension"])
    assert set(dims) == {"Sherlock Holmes", "Elizabeth Bennet"}, dims
    assert all(len(d) >= 3 for d in dims.values()), dims


def _check_arithmetic(eval_dir: Path) -> None:
    """The report's numbers follow from the judgments: item scores, hallucination flags, leaderboard."""
    judgments = pq.read_table(eval_dir / "judgments.parquet").to_pylist()
    checks = pq.read_table(eval_dir / "checks.parquet").to_pylist()
    scores = pq.read_table(eval_dir / "item_scores.parquet").to_pylist()
    board = {r["model"]: r for r in pq.read_table(eval_dir / "leaderboard.parquet").to_pylist()}
    sigma = {(j["item_id"], j["model"], j["order"]): j["sigma"] for j in judgments if j["status"] == "ok"}
    said_yes = {(c["item_id"], c["model"], c["order"]) for c in checks if c["answer"] == "Yes"}
    checked = {(c["item_id"], c["model"]) for c in checks}
    for row in scores:
        key = (row["item_id"], row["model"])
        assert (row["sigma1"], row["sigma2"]) == (sigma.get((*key, 1)), sigma.get((*key, 2)))
        if row["sigma1"] is not None and row["sigma2"] is not None:
            assert row["score"] == pytest.approx(item_score(row["sigma1"], row["sigma2"]))
        if key in checked:
            assert row["hallucinated"] == ((*key, 1) in said_yes and (*key, 2) in said_yes)
    for model, line in board.items():
        mine = [r["score"] for r in scores if r["model"] == model]
        assert line["n"] == len(mine)
        assert line["score"] == pytest.approx(100 * sum(mine) / len(mine) / MAX_F)
