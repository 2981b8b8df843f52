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


def test_characterbench_is_its_own_logic_in_at_most_700_lines():
    """The kit carries the wiring: CharacterBench's flows and tasks (settings, checks, flow, reading, asking,
    judging, scoring, annotation) stay within 700 lines of Python. What the kit took on for it: the report's
    section on judges against people, a plain-number judge's reader, run tables read with a clear error,
    stage results and run summaries, the judges named by settings' fields."""
    root = Path(__file__).resolve().parents[1]
    files = [*(root / "flows" / "modes" / "characterbench").glob("*.py"),
             *(root / "tasks" / "modes" / "characterbench").glob("*.py")]
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)
    assert len(files) >= 10 and lines <= 700, lines


@pytest.mark.xdist_group("grouping-check")
def test_the_test_workers_keep_a_group_together(request):
    """CI runs on two workers with --dist loadgroup, so each group of tests (a Label Studio server, a trained
    adapter, a Prefect server made once for a module) stays on one worker. pytest 9.2 with pytest-xdist 3.8
    dropped the group silently (the tests then ran spread out, each worker making those fixtures again);
    xdist marks a grouped test's node id with its group, and that mark is what this checks."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("runs under the CI's test command (pytest -n 2 --dist loadgroup)")
    assert request.node.nodeid.endswith("@grouping-check"), request.node.nodeid
