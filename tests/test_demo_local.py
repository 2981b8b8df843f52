"""The README's demo, for real: the whole pipeline on the embedded local model (about 15 minutes on 2 CPU cores)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rpbench.storage.schemas import ITEMS, SCENES
from rpbench.storage.tables import read_rows
from tests.helpers import CLI

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
    assert proc.returncode == 0, output[-3000:]
    assert "Traceback" not in output
    assert len(read_rows(out / "pool" / SCENES.filename, SCENES)) >= 1  # the local model made at least one scene
    assert (out / "bench" / ITEMS.filename).is_file() and (out / "bench" / "items_per_dimension.png").is_file()
    report = (out / "eval" / "report.html").read_text(encoding="utf-8")
    assert "local-greedy" in report and "local-sampled" in report
    assert f"Report: {out}/eval/report.html" in proc.stdout
