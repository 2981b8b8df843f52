"""The layering contracts, ruff and mypy, as the test command runs them (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


@pytest.mark.parametrize("command", [["lint-imports"], ["ruff", "check", "."], ["mypy"]],
                         ids=["import-linter", "ruff", "mypy"])
def test_the_code_passes(command):
    proc = subprocess.run([str(BIN / command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


def test_characterbench_is_its_own_logic_in_at_most_760_lines():
    """The kit carries the wiring: CharacterBench's flows and tasks (settings, checks, flow, reading, asking,
    judging, scoring, annotation) stay within 760 lines of Python. What the kit took on for it: the report's
    section on judges against people, a plain-number judge's reader, run tables read with a clear error,
    stage results and run summaries, the judges named by settings' fields. Its release reader (``release.py``:
    where in its release's files each prompt is, a layout no other release shares) is counted apart; what it
    fills the release's prompts with is counted here."""
    root = Path(__file__).resolve().parents[1]
    files = [p for p in (*(root / "flows" / "modes" / "characterbench").glob("*.py"),
                         *(root / "tasks" / "modes" / "characterbench").glob("*.py")) if p.name != "release.py"]
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)
    assert len(files) >= 10 and lines <= 760, lines
