"""Deployments triggered from code and from `rpbench trigger`, against a real `prefect server start` on loopback
that the test starts and stops, with rpbench's deployments served by `python -m rpbench.deployments.serve`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import CLI, TEST_KEY_ENV, any_mode_responder

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
ZH = ROOT / "samples" / "rolellm" / "rolebench" / "rolebench-zh"
DEPLOYMENT = "rpbench-rolellm-eval/on-demand"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(what: str, ready, procs, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for p in procs:
            assert p.poll() is None, f"{what}: a process exited with {p.returncode}"
        if ready():
            return
        time.sleep(0.5)
    raise AssertionError(f"{what}: not ready after {seconds} s")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def _deployed(env: dict[str, str]) -> bool:
    proc = subprocess.run([sys.executable, "-m", "prefect", "deployment", "ls"], env=env, capture_output=True,
                          text=True, timeout=60)
    return "rpbench-rolellm-eval" in proc.stdout


@pytest.fixture(scope="module")
def served(_server, tmp_path_factory):
    """A Prefect server, the served deployments, and the environment that points at them."""
    folder = tmp_path_factory.mktemp("served")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PREFECT_HOME": str(folder / "prefect"), "PREFECT_API_URL": url,
           TEST_KEY_ENV: "sk-trigger-test", "RPBENCH_PROGRESS_BAR": "0",
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    logs = (folder / "server.log").open("ab"), (folder / "serve.log").open("ab")
    server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                               str(port)], env=env, stdout=logs[0], stderr=subprocess.STDOUT,
                              start_new_session=True)
    procs = [server]
    try:
        _wait("prefect server", lambda: _healthy(url), procs)
        procs.append(subprocess.Popen([sys.executable, "-m", "rpbench.deployments.serve"], cwd=ROOT, env=env,
                                      stdout=logs[1], stderr=subprocess.STDOUT, start_new_session=True))
        _wait("served deployments", lambda: _deployed(env), procs)
        _server.reset()
        _server.responder = any_mode_responder
        models = folder / "models.toml"
        models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{_server.base_url}"\napi_key_env = '
                          f'"{TEST_KEY_ENV}"\nstructured = "json_schema"\ntimeout = 5\n')
        yield env, folder, models
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
        _server.reset()


def test_rpbench_trigger_runs_a_deployment_to_completion(served):
    env, folder, models = served
    out = folder / "from-cli"
    proc = subprocess.run([*CLI, "trigger", DEPLOYMENT, "--param", f"data={ZH}", "--param", "models=rolellm-player",
                           "--param", "limit=1", "--param", f"models_file={models}", "--param", f"out={out}",
                           "--param", "resamples=50", "--timeout", "300"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "Completed" in proc.stdout and DEPLOYMENT in proc.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["flow"] == "rolellm-eval" and manifest["rolellm"]["leaderboard"]


def test_the_python_api_starts_a_run_and_can_return_before_it_ends(served):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.utilities.asyncutils import run_coro_as_sync

    from rpbench.deployments.trigger import trigger

    env, folder, models = served
    # This process's Prefect settings were read at import: point them at the test's server for the test.
    with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"]}):
        _start_and_follow(folder, models, get_client, run_coro_as_sync, trigger)


def _start_and_follow(folder, models, get_client, run_coro_as_sync, trigger) -> None:
    run = trigger(DEPLOYMENT, {"data": str(ZH), "models": "rolellm-player", "limit": 1, "models_file": str(models),
                               "out": str(folder / "from-api"), "resamples": 50}, wait=False)
    assert run.state_name in ("Scheduled", "Pending", "Running")
    assert run.parameters["settings"]["models"] == ["rolellm-player"]  # a single value for a list field

    async def final_state() -> str:
        async with get_client() as client:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                flow_run = await client.read_flow_run(run.flow_run_id)
                if flow_run.state and flow_run.state.is_final():
                    return str(flow_run.state.name)
                await asyncio.sleep(1)
            return "still running"

    assert run_coro_as_sync(final_state()) == "Completed"
    assert (folder / "from-api" / "manifest.json").is_file()


@pytest.mark.parametrize(("args", "message"), [
    (["rpbench-nothing/on-demand"], "unknown deployment 'rpbench-nothing/on-demand' (known: "),
    ([DEPLOYMENT, "--param", "colour=blue"], "has no setting 'colour' (known: "),
    ([DEPLOYMENT, "--param", "nothing"], "--param: 'nothing' is not key=value"),
])
def test_bad_triggers_are_one_line(served, args, message):
    env, _, _ = served
    proc = subprocess.run([*CLI, "trigger", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
