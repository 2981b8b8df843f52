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


def _gone(home: Path) -> bool:
    """No server of ``home`` is left within 10 s: the command tells it to stop and exits without waiting (it
    takes a few tenths of a second to stop, more on a busy machine)."""
    deadline = time.monotonic() + 10
    while _servers_of(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _servers_of(home) == []


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
    assert _gone(tmp_path / "home")


def test_a_command_ending_on_an_input_error_leaves_no_server(tmp_path):
    ran = subprocess.run([*CLI, "quiz", "run", "--questions", str(tmp_path / "missing.json"), "--model",
                          "openai/m", "--out", str(tmp_path / "run")], capture_output=True, text=True,
                         env=_env(tmp_path / "home"), cwd=tmp_path, timeout=120)
    assert ran.returncode == 2 and ran.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'missing.json'}: no such file"], ran.stderr
    assert _gone(tmp_path / "home")


def test_flow_runs_send_heartbeats_only_where_a_server_outlives_them(monkeypatch):
    """Prefect's heartbeats let an automation on a lasting server mark a killed run Crashed; on a temporary
    server nothing is left to watch them, and each flow run's end waited for the heartbeat thread's second."""
    from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

    from rpbench.flows.kit.running.environment import heartbeats_where_watched
    from rpbench.flows.kit.scale.shared_limits import OWN_SERVER_ENV

    default = get_current_settings().flows.heartbeat_frequency
    assert default  # Prefect's own default: on
    monkeypatch.setenv(OWN_SERVER_ENV, "http://127.0.0.1:9/api")
    for url, expected in ((None, None), ("http://127.0.0.1:9/api", None), ("http://prefect.example:4200/api",
                                                                           default)):
        with temporary_settings(updates={PREFECT_API_URL: url}), heartbeats_where_watched():
            assert get_current_settings().flows.heartbeat_frequency == expected, url
    assert get_current_settings().flows.heartbeat_frequency == default


def test_a_flow_run_on_the_sessions_own_server_runs_without_heartbeats(harness):
    from prefect import flow
    from prefect.settings import get_current_settings

    from rpbench.flows.kit.running.run import run_flow

    @flow
    def heartbeat_setting() -> int | None:
        return get_current_settings().flows.heartbeat_frequency

    assert run_flow(heartbeat_setting) is None
