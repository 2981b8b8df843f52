"""Character synthesis for real, on the embedded local model, through the CLI (a few minutes on 2 CPU cores)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rpbench.tasks.modes.furina.character_files import load_characters
from tests.helpers import CLI

pytestmark = pytest.mark.local_model
ROOT = Path(__file__).resolve().parent.parent


def _cli(*args: str, env: dict[str, str], timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_synthesis_on_the_local_model_writes_files_the_checkers_accept(tmp_path):
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}
    out = tmp_path / "synth.yaml"
    made = _cli("characters", "synthesize", "--n", "2", "--max-refine", "0", "--out", str(out),
                "--run-dir", str(tmp_path / "run"), "--cache", str(tmp_path / "calls.sqlite"), env=env, timeout=2400)
    output = made.stdout + made.stderr
    assert made.returncode == 0, output[-3000:]
    assert "Traceback" not in output
    assert "synthesize-world[world-0]: character 2/2" in output and "synthesize-world[world-0]: dialogue of" in output

    checked = _cli("characters", "check", str(out), env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    characters = load_characters(out)
    assert len(characters) == 2 and {c.type for c in characters} == {"synthesized"}
    assert all(c.public() and len(c.public()) < len(c.attributes) for c in characters)  # private parts kept back

    scenes = out.with_suffix(".scenes.json")  # synth.yaml -> synth.scenes.json
    added = _cli("pool", "add", str(scenes), "--pool", str(tmp_path / "pool"), "--new", env=env)
    assert added.returncode == 0, added.stdout + added.stderr
    assert "added 1 scene(s)" in added.stdout
