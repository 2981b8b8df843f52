"""A command with no Prefect server configured launches its temporary one as it starts, so the server boots
while the command loads and checks its input (issue 80's small run waited 3.8 s for it after 5.6 s of
imports). Each test runs the command as its own process, as a user types it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from tests.helpers import CLI, TEST_KEY_ENV

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "samples" / "quiz" / "questions.jsonl"  # (a mode reading no release: CI's or not)


def _env(home: Path) -> dict[str, str]:
    """The environment of a user with no Prefect server: no PREFECT_* variable but a home of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RPBENCH_OWN_"))}
    return {**env, "PREFECT_HOME": str(home), TEST_KEY_ENV: "k"}


def _servers_of(home: Path) -> list[int]:
    """Processes serving Prefect's API with ``home`` as their Prefect home."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (b"create_app" in (proc / "cmdline").read_bytes()
                    and f"PREFECT_HOME={home}".encode() in (proc / "environ").read_bytes().split(b"\0")):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_a_run_uses_the_server_it_launched_as_it_started_and_stops_it(loopback, tmp_path):
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\n', encoding="utf-8")
    loopback.responder = lambda body: "B"
    args = [*CLI, "quiz", "run", "--questions", str(QUESTIONS), "--model", "openai/m", "--models-file", str(models),
            "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "calls.sqlite")]
    ran = subprocess.run(args, capture_output=True, text=True, env=_env(tmp_path / "home"), cwd=tmp_path,
                         timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "Prefect: a temporary server on http://127.0.0.1:" in ran.stderr
    assert "View at" not in ran.stderr  # it serves no UI: no link to a page that is not there
    assert (tmp_path / "run" / "report.html").is_file() and loopback.log
    again = subprocess.run(args, capture_output=True, text=True, env=_env(tmp_path / "home"), cwd=tmp_path,
                           timeout=300)
    assert again.returncode == 0 and " cached)" in again.stdout and "(0 cached)" not in again.stdout, (
        again.stdout[-2000:])
    time.sleep(0.5)
    assert _servers_of(tmp_path / "home") == []


def test_a_command_ending_on_an_input_error_leaves_no_server(tmp_path):
    ran = subprocess.run([*CLI, "quiz", "run", "--questions", str(tmp_path / "missing.json"), "--model",
                          "openai/m", "--out", str(tmp_path / "run")], capture_output=True, text=True,
                         env=_env(tmp_path / "home"), cwd=tmp_path, timeout=120)
    assert ran.returncode == 2 and ran.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'missing.json'}: no such file"], ran.stderr
    time.sleep(0.5)
    assert _servers_of(tmp_path / "home") == []
