"""Ctrl-C and SIGTERM as a shell sends them, to the command's whole process group, while a run waits on a slow
endpoint: the command exits within 20 s with 128 + the signal, leaves no process behind, and its rerun sends
exactly the requests that got no reply."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import CLI, TEST_KEY_ENV, rpbench
from tests.loopback import LoopbackServer

EXAMPLE = Path(__file__).resolve().parent.parent / "samples" / "roleinteract" / "example.json"
ITEMS = 21  # questions in the example: one request each, as every reply names an option

pytestmark = pytest.mark.xdist_group("interrupts")


def _descendants(pid: int) -> set[int]:
    """Every living process below ``pid`` (read from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def slow_endpoint():
    server = LoopbackServer(latency=1.5).start()
    server.responder = lambda body: "I choose B."
    yield server
    server.stop()


def _run_and_signal(server: LoopbackServer, tmp_path: Path, signals: list[signal.Signals], processes: int = 1):
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{server.base_url}"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\ntimeout = 30\nmax_concurrency = 3\nprocesses = {processes}\n')
    args = ["roleinteract", "run", "--data", str(EXAMPLE), "--model", "test", "--out", str(tmp_path / "run"),
            "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}  # its own temporary server
    env[TEST_KEY_ENV] = "k"
    # A session of its own, as a terminal gives a command: the signals go to its whole process group.
    proc = subprocess.Popen([*CLI, *args], cwd=tmp_path, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while sum(1 for e in server.log if e.get("ok")) < 6:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run sent nothing"
        time.sleep(0.05)
    started = _descendants(proc.pid)
    assert started, "the command started no process (the temporary Prefect server at least)"
    signalled = time.time()
    for k, sig in enumerate(signals):
        if k:
            time.sleep(0.3)
        os.killpg(proc.pid, sig)
    try:
        _out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        for pid in _descendants(proc.pid):
            os.kill(pid, signal.SIGKILL)
        raise AssertionError("the command did not exit within 20 s of the signal") from None
    gone = time.monotonic() + 5  # a child told to end when its parent did may take a moment to go
    while any(_alive(p) for p in started) and time.monotonic() < gone:
        time.sleep(0.1)
    assert not [p for p in started if _alive(p)], "processes the command started are still running"
    first = list(server.log)
    stopped_manifest = tmp_path / "run" / "manifest.json"
    manifest = json.loads(stopped_manifest.read_text()) if stopped_manifest.is_file() else None
    # The rerun, in this process, on the fast endpoint: what it sends is what the stopped run did not get.
    server.latency = 0.0
    rerun = rpbench(*args, env={TEST_KEY_ENV: "k"})
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    return proc.returncode, err, signalled, first, server.log[len(first):], manifest


@pytest.mark.parametrize("sig,code,processes", [(signal.SIGINT, 130, 1), (signal.SIGTERM, 143, 2)],
                         ids=["SIGINT", "SIGTERM-with-worker-processes"])
def test_a_signal_to_the_group_stops_cleanly_and_the_rerun_sends_only_what_had_no_reply(
        harness, slow_endpoint, tmp_path, sig, code, processes):
    status, err, _at, first, rerun, manifest = _run_and_signal(slow_endpoint, tmp_path, [sig], processes)
    assert status == code, err[-2000:]
    # The stopped run's manifest has every section a finished run's has, its totals counting what was answered.
    assert manifest is not None and manifest["outcome"]["status"] == "stopped", err[-2000:]
    for key in ("totals", "this_run", "release_files", "role_settings", "prompt_templates"):
        assert key in manifest, key
    assert manifest["totals"]["calls"] >= sum(1 for e in first if e.get("ok"))
    assert "stopping" in err and "interrupted: finished stages and every reply received are kept" in err
    assert "Traceback" not in err
    answered = {e["digest"] for e in first if e.get("ok")}
    again = [e["digest"] for e in rerun]
    assert len(again) == len(set(again))
    assert not answered & set(again), "the rerun sent again requests the stopped run had a reply to"
    assert len(answered | set(again)) == ITEMS  # nothing missing either: each question asked once in all
    assert len(answered) >= 6


def test_a_second_ctrl_c_quits_at_once_keeping_what_was_recorded(harness, slow_endpoint, tmp_path):
    status, err, signalled, first, rerun, _manifest = _run_and_signal(slow_endpoint, tmp_path, [signal.SIGINT, signal.SIGINT])
    assert status == 130, err[-2000:]
    assert "quitting now" in err
    # Replies that came back before the first Ctrl-C were recorded; only what was on the wire may be sent again.
    recorded = {e["digest"] for e in first if e.get("ok") and e["answered"] < signalled - 0.2}
    again = {e["digest"] for e in rerun}
    assert recorded and not recorded & again
    assert len({e["digest"] for e in first if e.get("ok")} | again) == ITEMS
