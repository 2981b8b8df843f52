"""Bad input at the command line: one line naming what is wrong, exit status 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.helpers import CLI

ROOT = Path(__file__).resolve().parent.parent
STARTERS = ROOT / "samples" / "characters" / "starter.en.yaml"
# Every role the shipped models file names, and the names a user may refer to besides them.
_DEFAULT_ROLES = {*tomllib.loads((ROOT / "tasks" / "llm" / "default_models.toml").read_text())["roles"],
                  "checker", "director"}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "--bench", "/nonexistent", "--model", "local-greedy", "--out", "OUT"], "/nonexistent: no items.parquet"),
        (["build", "--characters", str(STARTERS), "--pool", "/nonexistent", "--out", "OUT"], "/nonexistent: no scenes.parquet"),
        (["build", "--characters", str(STARTERS), "--pool", "/tmp", "--out", "OUT", "--only", "Nobody"],
         "no character named Nobody"),
        (["models", "--models", "/nonexistent.toml"], "/nonexistent.toml: models config not found"),
        (["characters", "synthesize", "--out", "OUT", "--lang", "fr"], "unknown language 'fr'"),
        (["export", "/tmp", "--format", "csv"], "unknown format 'csv'"),
        # A typo in a model name is an error listing the names there are, never the default model.
        (["eval", "--bench", "/nonexistent", "--model", "local-greedyy", "--out", "OUT"],
         f"--model: unknown model 'local-greedyy' (known: {', '.join(sorted(_DEFAULT_ROLES))})"),
        (["eval", "--bench", "/nonexistent", "--model", "local/smollm2-13m", "--out", "OUT"],
         "--model: unknown local model 'smollm2-13m' (known: smollm2-135m)"),
        (["build", "--characters", str(STARTERS), "--pool", str(ROOT / "tests"), "--out", "OUT", "--source", "sorce"],
         "no scenes.parquet"),
        (["characters", "synthesize", "--out", "OUT", "--seed-role", "synthesiser"],
         "--seed-role: unknown model 'synthesiser'"),
        (["build", "--characters", str(STARTERS), "--pool", "/tmp", "--out", "OUT", "--keep-grade", "great"],
         "--keep-grade: unknown grade great"),
        (["eval", "--bench", "/tmp", "--out", "OUT"], "Missing option '--model'"),
        (["train", "--data", "/nonexistent", "--out", "OUT"], "/nonexistent: no such file or folder"),
        (["train", "--data", str(ROOT / "samples" / "rolellm" / "rolebench"), "--part", "test", "--preset", "huge",
          "--out", "OUT"], "--preset: unknown preset 'huge' (known: rolellama, small)"),
        (["train", "--data", str(ROOT / "samples" / "rolellm" / "rolebench"), "--part", "test", "--base",
          "openai/gpt-4o", "--out", "OUT"], "--base: 'openai/gpt-4o' is not a local model"),
        (["train", "--data", str(ROOT / "samples" / "rolellm" / "rolebench"), "--objective", "dpo", "--out", "OUT"],
         "preference pairs come from benchmark folders"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(args, message, tmp_path):
    proc = _run(*[str(tmp_path / "out") if a == "OUT" else a for a in args])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip(" ╭╰─│")]
    assert message in proc.stderr and ("error: " in lines[0] or "Missing option" in proc.stderr)
    if "Missing option" not in message:
        assert len(lines) == 1 and lines[0].startswith("error: ")


def test_every_command_has_help():
    for args in (["--help"], ["pool", "build", "--help"], ["eval", "--help"], ["build", "--help"], ["modes"]):
        proc = _run(*args)
        assert proc.returncode == 0 and ("Usage" in proc.stdout or "furina" in proc.stdout), args
    # Options and their defaults come from the flows' settings models.
    build = _run("build", "--help").stdout
    assert "--threshold" in build and "[default: 10]" in build and "--wave-size" in build


def test_eval_from_the_command_line_is_clean_and_a_rerun_sends_nothing(loopback, tmp_path):
    """Stages run on several event loops at once: no library may print a traceback doing so."""
    from tests.test_flows import _bench, _respond

    loopback.responder = _respond
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\n'
                      'api_key_env = "RPBENCH_CLI_KEY"\nstructured = "json_schema"\ntimeout = 5\n'
                      '[roles.warm]\ntemperature = 0.7\n')
    args = ["eval", "--bench", str(_bench(tmp_path)), "--model", "openai/under-test", "--model", "warm",
            "--out", str(tmp_path / "eval"), "--models", str(models), "--cache", str(tmp_path / "calls.sqlite")]
    env = {**os.environ, "RPBENCH_CLI_KEY": "sk-cli", "PREFECT_HOME": str(tmp_path / "prefect")}
    for expected in ("stages: 10 (0 cached)", "stages: 10 (10 cached); calls sent by this run: 0"):
        proc = subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0 and "Traceback" not in output and "ERROR" not in output, output[-3000:]
        assert expected in proc.stdout and "report: " in proc.stdout
