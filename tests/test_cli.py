"""Bad input at the command line: one line naming what is wrong, exit status 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STARTERS = ROOT / "samples" / "characters" / "starter.en.yaml"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rpbench.flows.cli.main", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "--bench", "/nonexistent", "--model", "local-greedy", "--out", "/tmp/x"], "/nonexistent: no items.parquet"),
        (["build", "--characters", str(STARTERS), "--pool", "/nonexistent", "--out", "/tmp/x"], "/nonexistent: no scenes.parquet"),
        (["build", "--characters", str(STARTERS), "--pool", "/tmp", "--out", "/tmp/x", "--only", "Nobody"],
         "no character named Nobody"),
        (["models", "--models", "/nonexistent.toml"], "/nonexistent.toml: models config not found"),
        (["characters", "synthesize", "--out", "/tmp/x.yaml", "--lang", "fr"], "unknown language 'fr'"),
        (["export", "/tmp", "--format", "csv"], "unknown format 'csv'"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(args, message):
    proc = _run(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_every_command_has_help():
    for args in (["--help"], ["pool", "build", "--help"], ["eval", "--help"]):
        proc = _run(*args)
        assert proc.returncode == 0 and "Usage" in proc.stdout, args
