"""Calls sent through gateway worker processes (``processes`` > 1) keep every gateway guarantee."""

from __future__ import annotations

import asyncio
import concurrent.futures
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
        pool = gateway._pool_for(gateway.config.for_role("scene"))
        await asyncio.to_thread(pool.wait_ready)
        results = await gateway.run_all([Request("scene", [{"role": "user", "content": f"hi {i}"}]) for i in range(24)])
        assert [r.text for r in results] == [f"echo: hi {i}" for i in range(24)]
        workers = list(pool._workers)
        pids = {w.proc.pid for w in workers}
        assert len(pids) == 2 and os.getpid() not in pids
        assert sum(w.served for w in workers) == 24 and all(w.served for w in workers)
        assert len(gateway.ledger.records()) == 24
        # The key reached the server from the workers, read from their own environment.
        assert all(os.environ[TEST_KEY_ENV] in h for h in loopback.auth_headers)
    finally:
        await gateway.aclose()
    assert all(w.proc.returncode is not None for w in workers)  # aclose stopped them


async def test_calls_do_not_wait_for_the_workers_to_start(make_gateway, loopback):
    """Workers take seconds to start (each imports litellm): meanwhile calls are sent from this process."""
    gateway = make_gateway(processes=2, max_concurrency=8)
    try:
        results = await gateway.run_all([Request("scene", [{"role": "user", "content": f"hi {i}"}]) for i in range(6)])
        assert [r.text for r in results] == [f"echo: hi {i}" for i in range(6)]
        (pool,) = gateway._held.values()
        assert sum(w.served for w in pool._workers) == 0  # all answered before any worker was up
        await asyncio.to_thread(pool.wait_ready)  # and the workers were started meanwhile
        await gateway.complete("scene", [{"role": "user", "content": "now through a worker"}])
        assert sum(w.served for w in pool._workers) == 1
    finally:
        await gateway.aclose()


async def test_workers_that_cannot_start_are_an_error_not_a_silent_switch(make_gateway, loopback, monkeypatch):
    from rpbench.tasks.llm import process_pool

    def broken(self, deadline):
        self.proc.kill()
        raise process_pool.WorkerCallError("a gateway worker process failed to start (see its stderr above)",
                                           transient=False)

    monkeypatch.setattr(process_pool._Worker, "wait_ready", broken)
    gateway = make_gateway(processes=2, max_concurrency=8)
    try:
        pool = gateway._pool_for(gateway.config.for_role("scene"))
        with pytest.raises(process_pool.WorkerCallError, match="failed to start"):
            await asyncio.to_thread(pool.wait_ready)
        result = await gateway.complete("scene", [{"role": "user", "content": "hi"}])
        assert not result.ok and "failed to start" in result.error
        assert gateway.ledger.records()[0].outcome == "failed"
    finally:
        await gateway.aclose()


def test_stages_on_their_own_event_loops_share_one_pool_of_workers(make_gateway, loopback):
    """Four stages at once (each a fork on its own loop and thread, as Prefect runs them) send through the same
    two workers, not two each; the workers stop when the last stage closes."""
    from rpbench.tasks.llm import process_pool

    gateway = make_gateway(processes=2, max_concurrency=8)
    forks = [gateway.fork() for _ in range(4)]
    seen: dict[int, tuple] = {}

    def stage(k: int) -> list[str]:
        async def run() -> list[str]:
            fork = forks[k]
            try:
                await asyncio.to_thread(fork._pool_for(fork.config.for_role("scene")).wait_ready)
                results = await fork.run_all([Request("scene", [{"role": "user", "content": f"s{k} q{i}"}])
                                              for i in range(12)])
                (pool,) = fork._held.values()
                seen[k] = (pool, list(pool._workers))
                return [r.text for r in results]
            finally:
                await fork.aclose()
        return asyncio.run(run())

    with concurrent.futures.ThreadPoolExecutor(4) as threads:
        texts = list(threads.map(stage, range(4)))
    assert texts == [[f"echo: s{k} q{i}" for i in range(12)] for k in range(4)]
    pools = {id(pool) for pool, _ in seen.values()}
    procs = {w.proc.pid: w.proc for _, ws in seen.values() for w in ws}
    assert len(pools) == 1 and len(procs) == 2 and os.getpid() not in procs
    workers = {w.proc.pid: w for _, ws in seen.values() for w in ws}
    assert sum(w.served for w in workers.values()) == 48  # every call of every stage went through them
    assert all(p.returncode is not None for p in procs.values())  # the last stage to close stopped them
    assert process_pool._pools == {}


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
        pool = gateway._pool_for(gateway.config.for_role("scene"))
        await asyncio.to_thread(pool.wait_ready)
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
        await asyncio.to_thread(pool.wait_ready)  # replaced in the background
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


def test_a_run_starts_its_workers_as_it_starts_and_its_first_stage_takes_them_over(tmp_path, monkeypatch):
    """``processes`` > 1: the workers import litellm while the run reads its data, not after its first call.
    The first stage to use them takes them over, so they stop with the last stage using them (a report stage
    after it does not carry them); a run whose stages never used them stops them as it ends. A subflow (the
    suite's modes) starts none of its own. Stages on Dask workers start their own, so none start here."""
    from rpbench.flows.kit.scale.run_workers import workers_for_run
    from rpbench.tasks.llm import process_pool

    models = tmp_path / "models.toml"
    models.write_text('[default]\nmodel = "openai/m"\nprocesses = 2\n[roles.judge]\nprocesses = 1\n')
    monkeypatch.delenv("RPBENCH_RUNNER", raising=False)
    assert process_pool._pools == {}
    with workers_for_run(str(models)):
        assert list(process_pool._pools) == [2]  # one pool for the size asked; none for the judge's 1
        pool = process_pool._pools[2][0]
        with workers_for_run(str(models)):
            assert process_pool._pools[2] == (pool, 2) and process_pool._warm == {2: 2}
        assert process_pool._pools[2] == (pool, 1)  # the subflow's end leaves the run's own start alone
        pool.wait_ready()  # started by the run, with no call made
        workers = list(pool._workers)
        assert len(workers) == 2 and all(w.proc.poll() is None for w in workers)
    assert process_pool._pools == {}  # no stage took them: they stopped with the run
    assert all(w.proc.returncode is not None for w in workers)

    with workers_for_run(str(models)), workers_for_run(str(models)):
        stage = process_pool.acquire_pool(2)  # the first stage takes them over, from both runs
        assert process_pool._pools[2] == (stage, 1) and process_pool._warm == {}
    assert process_pool._pools[2] == (stage, 1)  # the run ended; its stage still uses them
    assert process_pool.release_pool(stage)  # the stage's end stops them
    stage.close()
    assert process_pool._pools == {}

    monkeypatch.setenv("RPBENCH_RUNNER", "dask")
    with workers_for_run(str(models)):
        assert process_pool._pools == {}
    # A models file the flow will reject starts nothing here (the flow says what is wrong with it).
    monkeypatch.delenv("RPBENCH_RUNNER")
    bad = tmp_path / "bad.toml"
    bad.write_text('[default]\nmodel = "openai/m"\nprocesses = 2\nmax_concurrency = "many"\n')
    with pytest.raises(InputError):
        load_models_config(str(bad))
    with workers_for_run(str(bad)):
        assert process_pool._pools == {}


def test_the_command_line_starts_the_workers_before_its_flow_and_a_command_without_calls_does_not(
        tmp_path, monkeypatch):
    """The command line starts the workers as soon as it has checked its settings, while it goes on to import
    Prefect and start the flow (the flow's own start finds them running and counts one more use); the pool's
    use ends with the command if no stage took it. ``prepare`` and ``pool chunk`` send no call: none start."""
    import typer
    from typer.testing import CliRunner

    from rpbench.flows.kit.commands.settings_commands import settings_command
    from rpbench.flows.kit.front.settings import RunSettings
    from rpbench.tasks.llm import process_pool

    models = tmp_path / "models.toml"
    models.write_text('[default]\nmodel = "openai/m"\nprocesses = 2\n')
    monkeypatch.delenv("RPBENCH_RUNNER", raising=False)
    seen: list[dict] = []

    def run(settings: RunSettings) -> None:
        """A run."""
        seen.append({size: users for size, (_pool, users) in process_pool._pools.items()})

    app = typer.Typer()
    app.command("run")(settings_command(RunSettings, run))
    app.command("setup")(settings_command(RunSettings, run, starts_workers=False))
    result = CliRunner().invoke(app, ["run", "--models-file", str(models)])
    assert result.exit_code == 0, result.output
    assert seen == [{2: 1}]  # running while the command's own code ran
    assert process_pool._pools == {}  # and stopped with it, as no stage took them over
    result = CliRunner().invoke(app, ["setup", "--models-file", str(models)])
    assert result.exit_code == 0, result.output
    assert seen[-1] == {} and process_pool._pools == {}


def test_tuning_loads_litellm_s_tokenizer_before_any_call():
    """hosted_vllm's route loads litellm's tokenizer on its first call, under an import lock: a burst's first
    wave then queued behind it on litellm's few request-preparing threads. Tuning loads it first."""
    import sys

    from rpbench.tasks.llm.litellm_call import tune_litellm

    tune_litellm()
    assert "encoding" in vars(sys.modules["litellm.main"])  # loaded: the first call finds it in place


async def test_the_warm_up_call_sends_nothing():
    """The warm-up a worker makes before it says it is ready is answered by litellm itself: no key, no
    server. Without ``mock_response`` it would fail here (no key, and no network in the tests)."""
    from rpbench.tasks.llm.litellm_call import tune_litellm, warm_up

    tune_litellm()
    await warm_up()
