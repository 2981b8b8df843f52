"""Batch APIs (``batch = true`` for a role, ``--batch``): independent calls go to the loopback server's OpenAI
Files and Batches endpoints, one batch per stage shard and model, at the batch price; a run killed while its
batch is in flight and started again submits no new batch; dialogues stay interactive."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rpbench.flows.kit.front.registry import modes
from rpbench.tasks.llm.batches import batch_digest, send_batch
from rpbench.tasks.llm.cache import CallCache
from rpbench.tasks.llm.config import ModelSpec
from tests.helpers import CLI, TEST_KEY_ENV, any_mode_responder, loopback_models_file, rpbench

pytestmark = pytest.mark.usefixtures("harness")
PRICE = (0.000002, 0.000008)  # interactive USD per prompt / reply token
BATCH_PRICE = (0.000001, 0.000004)


def _models_file(work: Path, server, batch: bool = True) -> Path:
    return loopback_models_file(
        work / "models.toml", server,
        f"batch = {str(batch).lower()}\nbatch_poll_s = 0.1\ninput_cost_per_token = {PRICE[0]}\n"
        f"output_cost_per_token = {PRICE[1]}\nbatch_input_cost_per_token = {BATCH_PRICE[0]}\n"
        f"batch_output_cost_per_token = {BATCH_PRICE[1]}\n")


def _calls(folder: Path, stage: str) -> list[dict]:
    rows = []
    for path in sorted((folder / "calls").glob(f"{stage}*.parquet")):
        rows += pq.read_table(path).to_pylist()
    return rows


@pytest.fixture
def server(loopback, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "sk-test-abcdef0123456789")
    loopback.responder = any_mode_responder
    return loopback


def _step(mode: str, name: str, work: Path):
    return next(s for s in modes()[mode].smoke_steps(work) if s.name == name)


def test_furina_judging_goes_in_batches_at_the_batch_price_and_dialogues_stay_interactive(server, tmp_path):
    models, cache = _models_file(tmp_path, server), tmp_path / "calls.sqlite"
    shared = ["--models-file", str(models), "--cache", str(cache)]
    for step in modes()["furina"].smoke_steps(tmp_path / "work"):
        if step.name == "eval":
            server.requests.clear()
        ran = rpbench(*step.args, *(shared if step.uses_models else []))
        assert ran.returncode == 0, f"{step.name}: {ran.stderr[-2000:]}"
    eval_out = tmp_path / "work" / "eval"
    assert server.batches, "no batch was submitted"
    assert not server.requests, f"the evaluation sent {len(server.requests)} requests outside a batch"
    judged = _calls(eval_out, "eval-judgments")
    batched_keys = {line["custom_id"] for line in server.batch_requests}
    assert {c["cache_key"] for c in judged if c["attempt"] == 0} <= batched_keys
    # Each request once (the same judgment asked twice, or by two shards, is read from the cache the second
    # time), at the batch price of its tokens.
    paid = [c for c in judged if not c["cached"]]
    assert len(paid) == len({c["cache_key"] for c in judged}) and len(server.batch_requests) == len(batched_keys)
    for c in paid:
        assert c["cost_usd"] == pytest.approx(BATCH_PRICE[0] * c["prompt_tokens"] + BATCH_PRICE[1] *
                                              c["completion_tokens"])
    # The run's accounting (the manifest's cost) is what the calls cost at those prices.
    manifest = json.loads((eval_out / "manifest.json").read_text())
    every = [r for path in (eval_out / "calls").glob("*.parquet") for r in pq.read_table(path).to_pylist()]
    assert manifest["totals"]["cost_usd"] == pytest.approx(sum(r["cost_usd"] or 0 for r in every if not r["cached"]),
                                                           abs=1e-6)
    # One batch per stage shard and model: every batch's requests are those of one stage shard's calls table.
    shards = {path.name: {r["cache_key"] for r in pq.read_table(path).to_pylist()}
              for path in (eval_out / "calls").glob("eval-*.parquet")}
    for batch in server.batches.values():
        lines = server.files[batch["input_file_id"]][1].splitlines()
        keys = {json.loads(x)["custom_id"] for x in lines if x.strip()}
        assert [name for name, made in shards.items() if keys <= made], f"batch {batch['id']} spans stage shards"
    # The build's dialogue turns were sent one by one (each waits on the last reply): none went in a batch.
    simulated = _calls(tmp_path / "work" / "bench", "build-simulate")
    assert simulated and not {c["cache_key"] for c in simulated} & batched_keys


def test_a_run_killed_while_its_batch_is_in_flight_polls_the_same_batch_again(server, tmp_path):
    models, cache = _models_file(tmp_path, server), tmp_path / "calls.sqlite"
    step = _step("roleinteract", "roleinteract", tmp_path / "work")
    # One model under test, so one batch: the kill lands while it is in flight, not between two submissions.
    at = step.args.index("judge")
    step = dataclasses.replace(step, args=step.args[:at - 1] + step.args[at + 1:])
    server.batch_delay = 3600  # the batch stays in flight until the test lets it finish
    env = {**os.environ, "RPBENCH_PROGRESS_BAR": "0", "RPBENCH_SHARED_LIMITS": "0"}
    proc = subprocess.Popen([*CLI, *step.args, "--models-file", str(models), "--cache", str(cache)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not server.batches and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert server.batches, f"no batch was submitted: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}"
        time.sleep(0.5)  # it polls the batch meanwhile
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert len(server.batches) == 1 and not server.requests
    for batch in server.batches.values():
        batch["_ready_at"] = 0.0  # the provider finishes it while no run is watching
    ran = rpbench(*step.args, "--models-file", str(models), "--cache", str(cache))
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert len(server.batches) == 1, "the rerun submitted a batch again"
    assert not server.requests, "the rerun sent the batch's requests one by one"
    answered = _calls(step.out, "roleinteract-answers")
    assert answered and {c["cache_key"] for c in answered} <= {line["custom_id"] for line in server.batch_requests}
    # A third run finds every reply in the cache: nothing new at all.
    ran = rpbench(*step.args, "--models-file", str(models), "--cache", str(cache))
    assert ran.returncode == 0 and len(server.batches) == 1 and not server.requests


def test_a_batch_created_but_never_journaled_is_found_again_by_its_digest(server, tmp_path):
    """Killed between asking for the batch and writing its id down: the rerun finds it among the provider's
    batches by the digest in its metadata, and submits nothing."""
    spec = ModelSpec(model="openai/loopback", api_base=server.base_url, api_key_env=TEST_KEY_ENV,
                     batch=True, batch_poll_s=0.05)
    cache = CallCache(tmp_path / "calls.sqlite")
    items = [(f"key-{k}", [{"role": "user", "content": f"question {k}"}], None, 0) for k in range(3)]
    server.batch_delay = 3600  # in flight until the run has looked at it once (a timed delay raced a busy machine)
    seen: list[str] = []

    def polled(line: str) -> None:
        seen.append(line)
        for batch in server.batches.values():
            batch["_ready_at"] = 0.0

    first = asyncio.run(send_batch(spec, items, cache, "test", on_poll=polled))
    assert len(server.batches) == 1 and len(first[1]) == 3
    assert seen and seen[0] == f"batch {first[0]} in_progress, 0 of 3 answered"  # what the progress line shows
    digest = batch_digest(spec, [i[0] for i in items])
    cache.journal_batch(digest, {"file_id": "file-1", "creating": True})  # as a kill would have left it
    again = asyncio.run(send_batch(spec, items, cache, "test"))
    assert len(server.batches) == 1 and again[0] == first[0] and again[1] == first[1]


def _route(server, route: str) -> ModelSpec:
    if route == "azure":  # an Azure deployment: the client adds /openai/... and the API version
        return ModelSpec(model="azure/rp-deployment", api_base=server.base_url.removesuffix("/v1"),
                         api_key_env=TEST_KEY_ENV, extra={"api_version": "2024-10-21"}, batch=True, batch_poll_s=0.05)
    return ModelSpec(model="openai/loopback", api_base=server.base_url, api_key_env=TEST_KEY_ENV,
                     batch=True, batch_poll_s=0.05)


@pytest.mark.parametrize("route", ["openai", "azure"])
def test_a_batch_whose_creation_reply_is_lost_is_not_created_again(server, tmp_path, route):
    """The provider makes the batch but its reply never arrives (a 500 from a proxy, twice): no second batch
    is made, neither by the client's own retries nor by ours; the one made is found by its digest and used.
    (Azure's client ignored the creation's ``max_retries=0`` when an upload had made the client first.)"""
    items = [(f"key-{k}", [{"role": "user", "content": f"question {k}"}], None, 0) for k in range(3)]
    server.batch_creates_lost = 2
    batch_id, replies = asyncio.run(send_batch(_route(server, route), items, CallCache(tmp_path / "calls.sqlite"),
                                               "test"))
    assert list(server.batches) == [batch_id] and len(replies) == 3
    assert server.batch_creates_lost == 1  # one creation asked for, not three


@pytest.mark.parametrize("together", [False, True])
def test_two_runs_submitting_the_same_calls_use_one_batch_and_cancel_the_other(server, tmp_path, together):
    """Two runs with call caches of their own (or one whose journal lost the batch) submit the very same calls:
    each makes a batch, finds the other carrying the same name, and both keep the older and cancel the newer,
    so one batch is billed, both read its replies, and neither cancels the one the other polls. (A creation the
    SDK retried below litellm leaves the same pair.) ``together``: both submit at once, on their own loops."""
    import threading

    spec = _route(server, "azure")
    items = [(f"key-{k}", [{"role": "user", "content": f"question {k}"}], None, 0) for k in range(3)]
    server.batch_delay = 1.5  # every batch still in progress when the doubles are looked for
    got: dict[str, tuple[str, dict]] = {}

    def run(name: str, delay: float) -> None:
        time.sleep(delay)
        got[name] = asyncio.run(send_batch(spec, items, CallCache(tmp_path / f"{name}.sqlite"), name))

    runs = [threading.Thread(target=run, args=(name, 0.0 if together else k * 0.3)) for k, name in enumerate("ab")]
    for thread in runs:
        thread.start()
    for thread in runs:
        thread.join()
    assert len(server.batches) == 2  # each made one
    live = [b for b, view in server.batches.items() if view["status"] != "cancelled"]
    assert len(live) == 1 and live[0] == min(server.batches)  # the older kept
    assert got["a"][0] == got["b"][0] == live[0] and len(got["a"][1]) == len(got["b"][1]) == 3


def test_a_batch_cancelled_by_another_run_before_it_looks_polls_the_one_that_run_kept(server, tmp_path):
    """Two runs at once: the other run lists the batches first, keeps its older one and cancels ours before our
    own look, which then no longer shows ours. We poll the one it kept, rather than our cancelled batch (whose
    calls would all go out again at full price)."""
    spec = _route(server, "azure")
    items = [(f"key-{k}", [{"role": "user", "content": f"question {k}"}], None, 0) for k in range(3)]
    server.batch_delay = 0.5

    def the_other_run(made: str) -> None:  # its batch for the same calls, older than ours, and ours cancelled
        server.on_batch_created = None
        server.batches["batch_0"] = {**server.batches[made], "id": "batch_0", "created_at": 0}
        server.batches[made]["status"] = "cancelled"

    server.on_batch_created = the_other_run
    used, replies = asyncio.run(send_batch(spec, items, CallCache(tmp_path / "calls.sqlite"), "ours"))
    assert used == "batch_0" and len(replies) == 3
    assert len(server.requests) == 0  # nothing sent one by one


def test_stage_shards_on_their_own_event_loops_share_the_provider_client_safely(server, tmp_path):
    """Two shards creating their batches at once, each on its own event loop (as stage shards run): litellm
    reuses one Azure client whichever loop asks, whose connections belong to the loop that made it. Each
    shard gets its one batch, with no connection error and no double."""
    spec = _route(server, "azure")
    cache = CallCache(tmp_path / "calls.sqlite")
    made: dict[str, str] = {}

    def shard(tag: str) -> None:
        items = [(f"key-{tag}-{k}", [{"role": "user", "content": f"{tag} {k}"}], None, 0) for k in range(3)]
        made[tag] = asyncio.run(send_batch(spec, items, cache, tag))[0]

    import threading

    threads = [threading.Thread(target=shard, args=(tag,)) for tag in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(made) == ["a", "b"] and sorted(made.values()) == sorted(server.batches)
    assert len(server.batches) == 2


def test_the_plan_prices_batched_calls_at_the_batch_price_and_names_dialogues_left_interactive(server, tmp_path):
    models, cache = _models_file(tmp_path, server), tmp_path / "calls.sqlite"
    step = _step("pingpong", "pingpong", tmp_path / "work")
    ran = rpbench(*step.args, "--models-file", str(models), "--cache", str(cache), "--plan", "--json")
    assert ran.returncode == 0, ran.stderr[-2000:]
    plan = json.loads(ran.stdout.strip().splitlines()[-1])
    by_stage = {(r["stage"], r["role"]): r for r in plan["stages"]}
    judged = [r for (stage, _), r in by_stage.items() if stage == "pingpong-judgments" and r["calls"]]
    talked = [r for (stage, _), r in by_stage.items() if stage == "pingpong-conversations" and r["calls"]]
    assert judged and all(r["sent_as"] == "batch" for r in judged)
    assert talked and all(r["sent_as"] == "interactive" for r in talked)
    assert any("sent one by one" in n for n in plan["notes"])
    for r in judged:
        low = r["prompt_tokens"][0] if isinstance(r["prompt_tokens"], list) else r["prompt_tokens"]
        reply = r["reply_tokens"][0] if isinstance(r["reply_tokens"], list) else r["reply_tokens"]
        cost = r["cost_usd"][0] if isinstance(r["cost_usd"], list) else r["cost_usd"]
        assert cost == pytest.approx(BATCH_PRICE[0] * low + BATCH_PRICE[1] * reply, rel=1e-3)


def test_the_batch_option_batches_every_role_of_a_models_file_that_does_not(server, tmp_path):
    models, cache = _models_file(tmp_path, server, batch=False), tmp_path / "calls.sqlite"
    step = _step("roleinteract", "roleinteract", tmp_path / "work")
    ran = rpbench(*step.args, "--models-file", str(models), "--cache", str(cache), "--batch")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert server.batches and not server.requests
    batches = len(server.batches)
    # Without it, the same models file sends them one by one.
    ran = rpbench(*step.args, "--models-file", str(models), "--cache", str(tmp_path / "other.sqlite"),
                  "--out", str(tmp_path / "again"))
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert len(server.batches) == batches and server.requests


def test_azures_route_batches_through_its_own_files_and_batches_endpoints(server, tmp_path):
    """An ``azure/`` deployment (its api_base and api_version) sends RoleInteract's answers as one batch to Azure
    OpenAI's /openai/files and /openai/batches, nothing one by one, at the batch price."""
    models = tmp_path / "models.toml"
    azure = server.base_url.removesuffix("/v1")  # an Azure endpoint: the client adds /openai/...
    models.write_text(f'[default]\nmodel = "azure/rp-deployment"\napi_base = "{azure}"\n'
                      f'api_version = "2024-10-21"\n')
    refused = rpbench("models", "check", "--models-file", str(models))
    assert refused.returncode == 2 and "field 'default.api_version'" in refused.stderr
    assert "[default.extra]: api_version = ..." in refused.stderr
    models.write_text(f'[default]\nmodel = "azure/rp-deployment"\napi_base = "{azure}"\n'
                      f'extra = {{api_version = "2024-10-21"}}\napi_key_env = "{TEST_KEY_ENV}"\nbatch = true\n'
                      f"batch_poll_s = 0.1\ninput_cost_per_token = {PRICE[0]}\noutput_cost_per_token = {PRICE[1]}\n"
                      f"batch_input_cost_per_token = {BATCH_PRICE[0]}\n"
                      f"batch_output_cost_per_token = {BATCH_PRICE[1]}\n")
    step = _step("roleinteract", "roleinteract", tmp_path / "work")
    ran = rpbench(*step.args, "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite"))
    assert ran.returncode == 0, ran.stderr[-2000:]
    # One batch per model under test (the two are the one deployment, each with its own role's settings), none
    # one by one.
    assert len(server.batches) == 2 and not server.requests
    calls = _calls(step.out, "roleinteract-answers")
    assert calls and {c["cache_key"] for c in calls} <= {line["custom_id"] for line in server.batch_requests}
    for c in calls:
        expected = BATCH_PRICE[0] * c["prompt_tokens"] + BATCH_PRICE[1] * c["completion_tokens"]
        assert c["cost_usd"] == pytest.approx(expected)


def test_a_role_whose_route_has_no_batch_api_cannot_ask_for_batches():
    with pytest.raises(ValueError, match="has no batch API"):
        ModelSpec(model="local/smollm2-135m", batch=True)
    with pytest.raises(ValueError, match="has no batch API"):
        ModelSpec(model="gemini/gemini-2.0-flash", batch=True)
    assert ModelSpec(model="azure/my-deployment", api_base="https://x.openai.azure.com", batch=True).batch


def test_where_batches_cannot_be_listed_a_failed_creation_is_not_tried_again(monkeypatch):
    """Anthropic's, Bedrock's and Mistral's batches cannot be listed through litellm, so a creation whose reply
    was lost cannot be told from one that failed: it is sent once and its error stands (the same command run
    again creates the batch), never retried into a second batch; nor is a listing asked for."""
    import httpx
    import litellm

    from rpbench.tasks.llm import batches
    from rpbench.tasks.llm.config import RetryPolicy

    asked: list[str] = []

    async def fake_api(name: str, provider: str, credentials: dict, **kwargs):
        asked.append(name)
        if name == "acreate_batch":
            raise litellm.InternalServerError("upstream reset", llm_provider=provider, model="m",
                                              response=httpx.Response(500, request=httpx.Request("POST", "http://x")))
        raise AssertionError(f"{name} was called")

    monkeypatch.setattr(batches, "_api", fake_api)
    policy = RetryPolicy(transient_attempts=4, backoff_initial=0, backoff_max=0)
    with pytest.raises(batches.BatchEndpointFailed) as failed:
        asyncio.run(batches._create("anthropic", "digest", "file-1", {}, policy))
    assert isinstance(failed.value.error, litellm.InternalServerError) and asked == ["acreate_batch"]
    # Where batches can be listed, the same failure is looked for and then tried again under the policy.
    asked.clear()
    with pytest.raises(batches.BatchEndpointFailed, match="alist_batches was called"):
        asyncio.run(batches._create("openai", "digest", "file-1", {}, policy))
    assert asked == ["acreate_batch", "alist_batches"]


@pytest.mark.parametrize("apart", [False, True], ids=["two-stages-of-one-process", "two-processes"])
def test_calls_two_stages_batch_at_once_go_in_one_batch_and_are_paid_once(server, tmp_path, apart):
    """Two stage shards batching at once, their calls overlapping (the same judgment asked by both): each call
    went into both batches and was paid twice (seen as the FURINA batch test failing under load). The second
    stage now leaves a call in the first one's batch to it and reads its reply; across processes sharing the
    call cache (here: two cache objects), through the call's claim."""
    import threading

    from rpbench.tasks.llm import Request
    from rpbench.tasks.llm.gateway import Gateway
    from rpbench.tasks.llm.ledger import Ledger
    from tests.helpers import loopback_config

    config = loopback_config(server, batch=True, batch_poll_s=0.05)
    first = Gateway(config, CallCache(tmp_path / "calls.sqlite"))
    second = Gateway(config, CallCache(tmp_path / "calls.sqlite")) if apart else first
    ledgers = {"a": Ledger(), "b": Ledger()}
    forks = {"a": first.fork(ledgers["a"]), "b": second.fork(ledgers["b"])}
    asked = {"a": range(0, 6), "b": range(3, 9)}  # 3, 4 and 5 asked by both
    started = threading.Barrier(2)

    def stage(tag: str) -> None:
        fork = forks[tag]
        fork.stage, fork.batchable = f"stage-{tag}", True
        requests = [Request("judge", [{"role": "user", "content": f"judge line {k}"}]) for k in asked[tag]]
        started.wait()
        results = asyncio.run(fork.run_all(requests))
        assert all(r.ok for r in results), [r.error for r in results]

    threads = [threading.Thread(target=stage, args=(tag,)) for tag in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    batched = [line["custom_id"] for line in server.batch_requests]
    assert len(batched) == len(set(batched)) == 9, sorted(batched)
    assert not server.requests  # none sent alone either
    paid = [r.cache_key for ledger in ledgers.values() for r in ledger.records() if not r.cached]
    assert len(paid) == len(set(paid)) == 9


def test_a_call_is_marked_for_one_stage_s_batch_as_it_is_taken(server, tmp_path):
    """Looked at and marked at once: a second stage taking calls for its batch before the first one's batch has
    even been submitted leaves the first one's calls out (two looks, then two marks, let both take them)."""
    import concurrent.futures

    from rpbench.tasks.llm.gateway import Gateway
    from tests.helpers import loopback_config

    config = loopback_config(server, batch=True)
    gateway = Gateway(config, CallCache(tmp_path / "calls.sqlite"))
    spec = config.default
    items = {k: (k, [{"role": "user", "content": k}], None, 0) for k in ("k1", "k2", "k3")}
    first: concurrent.futures.Future[None] = concurrent.futures.Future()
    assert list(gateway.fork()._take_for_batch(spec, {k: items[k] for k in ("k1", "k2")}, first)) == ["k1", "k2"]
    second: concurrent.futures.Future[None] = concurrent.futures.Future()
    assert list(gateway.fork()._take_for_batch(spec, {k: items[k] for k in ("k2", "k3")}, second)) == ["k3"]
    assert gateway._batching == {"k1": first, "k2": first, "k3": second}
    # Another process (its own cache object) takes none of them: each is claimed.
    other = Gateway(config, CallCache(tmp_path / "calls.sqlite"))
    assert other._take_for_batch(spec, items, concurrent.futures.Future()) == {}
    assert other._batching == {}
    # ... longer than an interactive request's tries (another process would then send them alone, and they would
    # be paid twice): dated forward, and renewed while the batch is waited for (the next test).
    from rpbench.tasks.llm.batches import BATCH_CLAIM_S

    held = other.cache.claim("k1")
    assert held is not None and not held.abandoned(other._patience(spec))
    assert held.at >= time.time() + BATCH_CLAIM_S - 60


def test_a_batch_s_claims_are_renewed_while_it_is_waited_for_and_lapse_when_its_owner_is_gone(
        server, tmp_path, monkeypatch):
    """A batch's claims stood for 24 hours: a process on another machine sharing the cache (whose pid cannot be
    asked) that died with its batch in flight made every run waiting on those calls wait a day. Now they are
    dated a short while forward and renewed as long as their owner waits for the batch; here the batch takes
    several claim periods and its claims never lapse, and a claim left by a process elsewhere lapses."""
    from rpbench.tasks.llm import Request, gateway
    from rpbench.tasks.llm.cache import Claim
    from tests.helpers import loopback_config

    monkeypatch.setattr(gateway, "BATCH_CLAIM_S", 1.0)  # renewed every 0.25 s
    server.batch_delay = 3.0
    config = loopback_config(server, batch=True, batch_poll_s=0.05)
    owner = gateway.Gateway(config, CallCache(tmp_path / "calls.sqlite"))
    owner.batchable = True
    watcher = CallCache(tmp_path / "calls.sqlite")  # another process's view of the cache
    patience = 0.0  # the strictest waiter: any claim dated in the past is taken as abandoned

    async def run_and_watch() -> list[tuple[float, bool]]:
        requests = [Request("judge", [{"role": "user", "content": f"judge line {k}"}]) for k in range(3)]
        running = asyncio.create_task(owner.run_all(requests))
        looks = []
        while not running.done():
            await asyncio.sleep(0.1)
            rows = watcher._conn.execute("SELECT owner, at FROM claims").fetchall()
            looks += [(time.monotonic(), not Claim(o, at).abandoned(patience)) for o, at in rows]
        results = await running
        assert all(r.ok for r in results) and len(server.batch_requests) == 3
        return looks

    looks = asyncio.run(run_and_watch())
    assert all(standing for _, standing in looks)
    assert looks[-1][0] - looks[0][0] > 2.0  # seen standing over twice the claims' period
    assert not watcher._conn.execute("SELECT * FROM claims").fetchall()  # each ended with its reply
    # A batch's claim whose owner, on another machine, stopped renewing it: taken over once its period is past.
    gone = Claim("elsewhere:123:abcd1234", time.time() + 0.4)
    assert not gone.abandoned(patience)
    time.sleep(0.5)
    assert gone.abandoned(patience)


@pytest.mark.parametrize("endpoint", ["list", "create", "retrieve", "content"])
def test_a_batch_endpoint_that_stays_down_ends_the_run_in_one_line(server, tmp_path, endpoint):
    """A provider error on any batch endpoint is retried as a chat error is; still failing, the run ends Failed
    (exit 3) with one line naming the provider, the endpoint and what to do, never a traceback. The listing is
    asked for on a rerun after a kill left a creation unjournaled (a creation whose reply was lost here)."""
    models = _models_file(tmp_path, server)
    if endpoint == "list":
        server.batch_creates_lost = 1  # the creation's reply lost: the batch is looked for by listing
    server.batch_faults = {endpoint: 1000}
    step = _step("characterbench", "characterbench", tmp_path / "work")
    ran = rpbench(*step.args, "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite"))
    assert ran.returncode == 3, ran.stderr[-2000:]
    lines = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in ran.stderr, ran.stderr[-2000:]
    assert "openai's batch API failed at" in lines[0] and "after its retries" in lines[0], lines[0]
    assert {"list": "GET /v1/batches (list)", "create": "POST /v1/batches (create)",
            "retrieve": "GET /v1/batches/{id} (status)",
            "content": "GET /v1/files/{id}/content (replies)"}[endpoint] in lines[0]
    assert "run the same command once openai answers" in lines[0]


def test_batch_api_calls_and_leases_run_on_the_process_one_background_loop(monkeypatch):
    """One owner of the background event loop: the files and batches API calls (from any stage's loop) and the
    Prefect server's leasers run on the same loop, started once per process, never on the caller's."""
    import litellm

    from rpbench.flows.kit.scale import leases
    from rpbench.tasks.llm import batches
    from rpbench.tasks.llm.event_loop import background_loop

    ran_on = []

    async def retrieve(**kwargs):
        ran_on.append(asyncio.get_running_loop())
        return kwargs["batch_id"]

    monkeypatch.setattr(litellm, "aretrieve_batch", retrieve, raising=False)

    async def from_a_stage_loop():
        caller = asyncio.get_running_loop()
        got = await batches._api("aretrieve_batch", "openai", {}, batch_id="b1")
        return caller, got

    caller, got = asyncio.run(from_a_stage_loop())
    assert got == "b1" and ran_on == [background_loop()] and ran_on[0] is not caller
    assert leases._service_loop() is background_loop()
