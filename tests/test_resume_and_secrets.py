"""A run killed mid-way repeats no completed call; keys never reach logs or files."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rpbench.tasks.core.errors import ModelUnusable
from rpbench.tasks.core.secrets import install_log_redaction, scrub
from rpbench.tasks.llm import Request
from rpbench.tasks.llm.cache import CallCache
from rpbench.tasks.llm.gateway import Gateway
from tests.helpers import TEST_KEY_ENV, loopback_config

ROOT = Path(__file__).resolve().parent.parent
N_CALLS = 40


def _requests() -> list[Request]:
    return [Request("scene", [{"role": "user", "content": f"line {i}"}], tag=f"r{i}") for i in range(N_CALLS)]


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, sys.argv[3])
    from tests.test_resume_and_secrets import _requests
    from tests.helpers import loopback_config
    from rpbench.tasks.llm.cache import CallCache
    from rpbench.tasks.llm.gateway import Gateway
    from tests.loopback import LoopbackServer

    server = LoopbackServer(port=int(sys.argv[1]))
    gateway = Gateway(loopback_config(server, max_concurrency=2), CallCache(sys.argv[2]))
    asyncio.run(gateway.run_all(_requests(), limit=2))
    print("finished")
    """
)


async def test_rerun_after_kill_repeats_no_completed_call(loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "sk-test-resume")
    loopback.latency = 0.05
    cache_path = tmp_path / "calls.sqlite"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(loopback.port), str(cache_path), str(ROOT)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 60
    while len(loopback.requests) < N_CALLS // 2 and time.time() < deadline:
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert len(loopback.requests) < N_CALLS, "the child finished before it could be killed"

    completed_before = len(CallCache(cache_path))
    assert 0 < completed_before < N_CALLS
    sent_before = len(loopback.requests)
    loopback.latency = 0.0

    gateway = Gateway(loopback_config(loopback), CallCache(cache_path))
    results = await gateway.run_all(_requests())
    assert [r.text for r in results] == [f"echo: line {i}" for i in range(N_CALLS)]
    sent_by_rerun = len(loopback.requests) - sent_before
    assert sent_by_rerun == N_CALLS - completed_before
    assert sum(r.cached for r in results) == completed_before
    await gateway.aclose()

    again = Gateway(loopback_config(loopback), CallCache(cache_path))
    await again.run_all(_requests())
    await again.aclose()
    assert len(loopback.requests) - sent_before == sent_by_rerun  # the third run sends nothing


async def test_api_key_never_reaches_logs_tables_or_manifest(make_gateway, loopback, tmp_path, caplog):
    from rpbench.storage.runs import RunDir

    secret = os.environ[TEST_KEY_ENV]
    install_log_redaction()
    caplog.set_level(logging.DEBUG)
    litellm_logger = logging.getLogger("LiteLLM")
    litellm_logger.setLevel(logging.DEBUG)
    gateway = make_gateway()
    loopback.inject("429")
    loopback.inject("500")
    await gateway.complete("judge", [{"role": "user", "content": "hello"}])
    loopback.inject("401")
    with pytest.raises(ModelUnusable, match="Incorrect API key"):
        await gateway.complete("judge", [{"role": "user", "content": "again"}])
    logging.getLogger("rpbench.test").warning("about to use key %s", secret)
    # The key did reach the server, so the test would notice if it were simply not used.
    assert any(secret in h for h in loopback.auth_headers)

    run = RunDir(tmp_path / "run")
    gateway.ledger.write(run.root / "calls.parquet")
    run.write_manifest(config=gateway.config.redacted(), echo={"api_key": secret, "note": f"k={secret}"})
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "manifest.json" for p in written)
    for path in written:
        assert secret.encode() not in path.read_bytes(), path
    assert secret not in caplog.text
    assert "about to use key ***" in caplog.text
    litellm_logger.setLevel(logging.WARNING)


def test_scrub_masks_values_and_secret_fields(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-999999")
    out = scrub({"api_key": "anything", "nested": ["Bearer sk-live-999999"], "n": 3})
    assert out == {"api_key": "***", "nested": ["Bearer ***"], "n": 3}


def test_a_secret_written_into_a_server_address_or_a_header_stays_out_of_manifests_logs_and_limits(
        tmp_path, caplog):
    """A key in the address's query (?key=..., as some proxies take one) and a key sent as a header through
    ``extra``: the manifest's config, `rpbench models`, the shared limit's name (the Prefect UI lists it) and log
    lines showed them as written. A user and password in the address (https://user:pw@host) cannot be sent beside
    the key (every request failed): the file is refused in one line, the password never shown."""
    from rpbench.flows.kit.scale.shared_limits import limit_name
    from rpbench.tasks.llm.config import load_models_config
    from tests.helpers import rpbench

    path = tmp_path / "models.toml"
    path.write_text('[default]\nmodel = "openai/m"\napi_base = "https://proxy.example/v1?key=AIzaQuerySecret9&v=2"\n'
                    '[default.extra.extra_headers]\nX-Api-Key = "hdr-Secret-4242"\nX-Title = "rpbench"\n')
    secrets = ("AIzaQuerySecret9", "hdr-Secret-4242")
    config = load_models_config(path)
    shown = str(config.redacted())
    assert not any(x in shown for x in secrets), shown
    assert "https://proxy.example/v1?key=***&v=2" in shown and "'X-Title': 'rpbench'" in shown
    name = limit_name(config.default.endpoint())
    assert "aizaquerysecret9" not in name and name.startswith("rpbench-openai-m-https-proxy")
    install_log_redaction()
    logging.getLogger("rpbench.test").warning("asking %s with %s", config.default.api_base, "hdr-Secret-4242")
    assert "AIzaQuerySecret9" not in caplog.text and "hdr-Secret-4242" not in caplog.text
    assert "asking https://proxy.example/v1?key=***&v=2 with ***" in caplog.text
    ran = rpbench("models", "--models-file", str(path))
    assert ran.returncode == 0 and not any(x in ran.stdout for x in secrets), ran.stdout
    assert "api_base='https://proxy.example/v1?key=***&v=2'" in ran.stdout
    # A password in the address: refused when the file is read, in one line that never shows it.
    path.write_text('[default]\nmodel = "openai/m"\napi_base = "https://bob:pw7@proxy.example/v1"\n')
    refused = rpbench("models", "--models-file", str(path))
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "field 'default.api_base': a user name and password" in refused.stderr and "pw7" not in refused.stderr
    env = rpbench("models", env={"RPBENCH_JUDGE_API_BASE": "http://u:hunter2secret@127.0.0.1:9/v1"})
    assert env.returncode == 2 and "user name and password" in env.stderr and "hunter2secret" not in env.stderr
    # A profile's entries are {key, value} pairs: "key" is not a secret's name.
    assert scrub({"key": "persona", "value": "calm"}) == {"key": "persona", "value": "calm"}


async def test_a_stage_killed_after_writing_its_calls_but_before_prefect_kept_it_still_counts_them(
        loopback, tmp_path, monkeypatch):
    """The window between a stage writing its calls table and Prefect persisting its result: a run killed
    there runs the stage again, its calls now come from the call cache, and only the journal still says
    which of them were sent. It stays until the flow has the result, then goes."""
    from rpbench.flows.kit.running.stage import StageRun, StageSpec
    from rpbench.flows.kit.running.stages import Stages
    from rpbench.storage.schemas import CALLS
    from rpbench.storage.tables import read_records

    monkeypatch.setenv(TEST_KEY_ENV, "sk-test-window")
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\nschema_rules = "vllm"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\n')
    params = {"out": str(tmp_path / "run"), "shard": "a", "models_file": str(models),
              "cache": str(tmp_path / "calls.sqlite")}
    spec = StageSpec("window")

    async def attempt() -> tuple[StageRun, object]:
        run = StageRun(spec, params)
        async with run.gateway() as gateway:
            await gateway.run_all(_requests()[:5])
        return run, run.result()

    first, _ = await attempt()  # ... and the process dies before Prefect keeps the result
    assert len(loopback.requests) == 5
    _, result = await attempt()  # the rerun: every reply from the call cache
    assert len(loopback.requests) == 5
    records = read_records(result.calls, CALLS)
    assert sum(not r.cached for r in records) == 5 and sum(r.cached for r in records) == 5

    class Done:  # what Stages.map is handed once Prefect has the result
        state = type("S", (), {"name": "Completed"})()

        def result(self):
            return result

    class Task:
        def submit(self, **_):
            return Done()

    Stages().map(Task(), [{}])
    assert not first.journal.exists()


def test_a_cache_shared_by_runs_at_once_waits_for_a_write_lock_rather_than_losing_a_reply(tmp_path):
    """Two runs may share one call cache; a reply paid for must not be lost because the other run held the
    write lock for a few seconds (sqlite3 gives up after five by default)."""
    import sqlite3
    import threading
    import time

    from rpbench.tasks.llm.cache import CallCache

    cache = CallCache(tmp_path / "calls.sqlite")
    assert cache._conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 60_000
    other = sqlite3.connect(tmp_path / "calls.sqlite", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # the other run's write, in progress
    threading.Timer(0.5, lambda: other.execute("COMMIT")).start()
    started = time.monotonic()
    cache.put("k", {"text": "paid for"})
    assert time.monotonic() - started >= 0.4 and cache.get("k") == {"text": "paid for"}
