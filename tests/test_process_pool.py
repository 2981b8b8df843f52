"""Calls sent through gateway worker processes (``processes`` > 1) keep every gateway guarantee."""

from __future__ import annotations

import asyncio
import os

import pytest

from rpbench.tasks.core.errors import InputError, ModelUnusable
from rpbench.tasks.llm import ModelSpec, Request, load_models_config
from rpbench.tasks.llm.litellm_call import request_kwargs
from tests.helpers import TEST_KEY_ENV
from tests.test_gateway import MSG, Verdict


async def test_calls_are_spread_over_worker_processes(make_gateway, loopback):
    gateway = make_gateway(processes=2, max_concurrency=8)
    try:
        results = await gateway.run_all([Request("scene", [{"role": "user", "content": f"hi {i}"}]) for i in range(24)])
        assert [r.text for r in results] == [f"echo: hi {i}" for i in range(24)]
        (pool,) = gateway._pools[asyncio.get_running_loop()].values()
        pids = {w.proc.pid for w in pool._workers}
        assert len(pids) == 2 and os.getpid() not in pids
        assert len(gateway.ledger.records()) == 24
        # The key reached the server from the workers, read from their own environment.
        assert all(os.environ[TEST_KEY_ENV] in h for h in loopback.auth_headers)
    finally:
        await gateway.aclose()
    assert all(w.proc.returncode is not None for w in pool._workers)  # aclose stopped them


async def test_worker_errors_keep_their_retry_verdict(make_gateway, loopback):
    gateway = make_gateway(processes=2)
    try:
        loopback.inject("429")
        recovered = await gateway.complete("judge", MSG, schema=Verdict)
        assert recovered.ok and gateway.ledger.records()[0].transient_retries == 1
        loopback.inject("401")  # fatal, and the server echoes the key in its error text
        with pytest.raises(ModelUnusable) as rejected:
            await gateway.complete("judge", [{"role": "user", "content": "other"}], schema=Verdict)
        assert "Incorrect API key" in str(rejected.value) and os.environ[TEST_KEY_ENV] not in str(rejected.value)
        assert len([r for r in loopback.log if r.get("fault") == "401"]) == 1  # not retried
    finally:
        await gateway.aclose()


async def test_a_dead_worker_is_replaced_and_its_calls_retried(make_gateway, loopback):
    loopback.latency = 0.5
    gateway = make_gateway(processes=2, max_concurrency=8)
    try:
        await gateway.complete("scene", [{"role": "user", "content": "start the workers"}])
        (pool,) = gateway._pools[asyncio.get_running_loop()].values()
        victim = pool._workers[0]
        calls = asyncio.ensure_future(
            gateway.run_all([Request("scene", [{"role": "user", "content": f"q {i}"}]) for i in range(8)])
        )
        await asyncio.sleep(0.25)  # the calls are waiting on the server now
        assert victim.pending
        victim.proc.kill()
        results = await calls
        assert all(r.ok for r in results)
        assert sum(r.transient_retries for r in gateway.ledger.records()) >= 1
        assert victim not in pool._workers and len(pool._workers) == 2
    finally:
        await gateway.aclose()


def test_the_key_is_not_part_of_what_is_sent_to_a_worker():
    spec = ModelSpec(model="openai/x", api_base="http://127.0.0.1:1/v1", api_key_env=TEST_KEY_ENV, processes=2)
    kwargs = request_kwargs(spec, MSG, None)
    assert "api_key" not in kwargs and "client" not in kwargs and "shared_session" not in kwargs


def test_the_local_model_cannot_be_given_worker_processes(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text('[default]\nmodel = "local/smollm2-135m"\nprocesses = 2\n')
    with pytest.raises(InputError, match="processes must be 1"):
        load_models_config(path, environ={})
