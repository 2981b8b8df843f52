"""The gateway against the loopback server: faults, parse failures, caching, limits."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from typing import Literal

import pytest
from pydantic import BaseModel

from rpbench.tasks.llm import Request
from tests.helpers import TEST_KEY_ENV


class Verdict(BaseModel):
    reason: str
    score: Literal[1, 2, 3, 4, 5]


MSG = [{"role": "user", "content": "Rate this line."}]


@pytest.mark.parametrize("fault", ["429", "500", "timeout", "malformed", "truncated"])
async def test_transient_faults_are_retried_and_recovered(make_gateway, loopback, fault):
    loopback.timeout_sleep = 3.0
    gateway = make_gateway(timeout=0.5)
    loopback.inject(fault)
    result = await gateway.complete("judge", MSG, schema=Verdict)
    assert result.ok, result.error
    assert result.parsed == Verdict(reason="scripted", score=3)
    assert len(loopback.requests) == 2
    (record,) = gateway.ledger.records()
    assert record.transient_retries == 1 and record.outcome == "ok"


@pytest.mark.parametrize("fault", ["malformed", "truncated"])
async def test_unreadable_bodies_from_vllm_style_servers_are_retried(make_gateway, loopback, fault):
    """litellm's hosted_vllm route reports a garbled 200 reply as an APIError with status 200."""
    gateway = make_gateway(model="hosted_vllm/loopback")
    loopback.inject(fault)
    result = await gateway.complete("judge", MSG, schema=Verdict)
    await gateway.aclose()
    assert result.ok, result.error
    assert len(loopback.requests) == 2
    (record,) = gateway.ledger.records()
    assert record.transient_retries == 1 and record.outcome == "ok"


def test_which_api_errors_are_transient():
    import litellm

    from rpbench.tasks.llm.transient import is_transient

    def api_error(status: int, message: str) -> litellm.APIError:
        return litellm.APIError(status_code=status, message=message, llm_provider="hosted_vllm", model="m")

    assert is_transient(api_error(200, "Expecting value: line 1 column 1 (char 0)"))
    assert is_transient(api_error(200, "something odd in the body"))
    assert is_transient(api_error(503, "overloaded"))
    assert not is_transient(api_error(400, "unknown parameter 'foo'"))
    assert not is_transient(api_error(400, "response_format: invalid JSON schema"))  # a refusal, not a garble
    assert not is_transient(litellm.AuthenticationError("bad key", llm_provider="openai", model="m"))


async def test_empty_reply_is_retried_as_a_parse_failure(make_gateway, loopback):
    gateway = make_gateway()
    loopback.inject("empty")
    result = await gateway.complete("scene", MSG)
    assert result.ok and result.text.startswith("echo:")
    outcomes = [r.outcome for r in gateway.ledger.records()]
    assert outcomes == ["parse_error", "ok"]
    # The retry says the reply was empty and asks again, as plain text: the request wanted no JSON, and no empty
    # assistant turn is sent back (several providers refuse one).
    again = loopback.requests[1]["messages"]
    assert again[-1]["content"].startswith("That reply could not be used: the reply is empty")
    assert again[-1]["content"].endswith("Reply again, in plain text.") and "JSON" not in again[-1]["content"]
    assert [m["role"] for m in again] == [m["role"] for m in MSG] + ["user"]


async def test_transient_retries_are_bounded(make_gateway, loopback):
    gateway = make_gateway()
    loopback.inject("500", times=10)
    result = await gateway.complete("judge", MSG, schema=Verdict)
    assert not result.ok and result.parsed is None
    assert len(loopback.requests) == 4  # the policy's transient_attempts
    assert gateway.ledger.totals()["failed"] == 1
    # The failed call records the retries it made (it recorded none before), and counts as sent.
    (record,) = gateway.ledger.records()
    assert record.transient_retries == 3 and not record.cached
    assert gateway.ledger.totals()["transient_retries"] == 3


async def test_unparseable_reply_is_retried_then_recorded_as_failure(make_gateway, loopback):
    gateway = make_gateway()
    loopback.script("no json here", '{"reason": "x", "score": 9}', "still nothing")
    result = await gateway.complete("judge", MSG, schema=Verdict)
    assert result.status == "failed"
    assert result.parsed is None  # never a default score
    assert result.text == "still nothing"
    assert result.raw_replies == ("no json here", '{"reason": "x", "score": 9}', "still nothing")
    assert "score" in (gateway.ledger.records()[1].error or "")
    totals = gateway.ledger.totals()
    assert totals["parse_errors"] == 3 and totals["calls_sent"] == 3


async def test_a_repaired_reply_is_accepted(make_gateway, loopback):
    gateway = make_gateway()
    loopback.script("I think it is a 4", '```json\n{"reason": "fine", "score": 4}\n```')
    result = await gateway.complete("judge", MSG, schema=Verdict)
    assert result.ok and result.parsed.score == 4 and result.attempts == 2


def _one_digit(text: str) -> int:
    digits = [c for c in text if c.isdigit()]
    if len(digits) != 1:
        raise ValueError("give exactly one digit")
    return int(digits[0])


async def test_a_free_text_parser_is_retried_like_a_schema_then_fails_with_the_raw_reply(make_gateway, loopback):
    gateway = make_gateway()
    loopback.script("hmm", "it is 7")
    result = await gateway.complete("judge", MSG, parse=_one_digit)
    assert result.ok and result.parsed == 7 and result.attempts == 2
    assert "give exactly one digit" in loopback.requests[1]["messages"][-1]["content"]  # shown back to the model
    loopback.script("no", "none", "nope")
    failed = await gateway.complete("judge", [{"role": "user", "content": "again"}], parse=_one_digit)
    assert not failed.ok and failed.parsed is None and failed.text == "nope" and failed.attempts == 3


async def test_a_404_stops_at_once(make_gateway, loopback):
    # A 404 (no such route, no such model) is not worth retrying, nor is any later call: one request.
    from rpbench.tasks.core.errors import ModelUnusable

    gateway = make_gateway(api_base=loopback.base_url + "/nowhere")
    with pytest.raises(ModelUnusable, match="NotFoundError"):
        await gateway.complete("judge", MSG)
    assert gateway.ledger.totals()["failed"] == 1


async def test_cache_answers_a_repeated_request_without_sending(make_gateway, loopback):
    gateway = make_gateway()
    first = await gateway.complete("judge", MSG, schema=Verdict)
    second = await make_gateway().complete("judge", MSG, schema=Verdict)
    assert first.parsed == second.parsed and second.cached
    assert len(loopback.requests) == 1
    # A different sample index is a different request.
    await gateway.complete("judge", MSG, schema=Verdict, sample_index=1)
    assert len(loopback.requests) == 2


async def test_concurrency_bound_is_respected(make_gateway, loopback):
    loopback.latency = 0.05
    in_flight, peak = 0, 0
    gateway = make_gateway(max_concurrency=4, cache=False)
    import litellm

    real = litellm.acompletion

    async def spy(**kwargs):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await real(**kwargs)
        finally:
            in_flight -= 1

    litellm.acompletion = spy
    try:
        results = await gateway.run_all([Request("scene", [{"role": "user", "content": f"n{i}"}]) for i in range(12)])
    finally:
        litellm.acompletion = real
    assert all(r.ok for r in results) and peak == 4
    assert [r.text for r in results] == [f"echo: n{i}" for i in range(12)]


async def test_rate_limit_spaces_requests(make_gateway, loopback):
    gateway = make_gateway(rpm=120, cache=False)  # 2 per second after the initial burst allowance
    start = asyncio.get_running_loop().time()
    await gateway.run_all([Request("scene", [{"role": "user", "content": f"r{i}"}]) for i in range(124)])
    elapsed = asyncio.get_running_loop().time() - start
    assert elapsed >= 1.5  # 120 fit the bucket, the other 4 wait for it to drain


async def test_identical_requests_in_flight_together_are_sent_once_and_share_the_reply(make_gateway, loopback):
    """A sampling model could answer two sends differently while the cache keeps one answer; a rerun would then
    read back another reply than the first run used (the demo's rerun once differed this way)."""
    import asyncio
    import itertools

    counter = itertools.count()
    loopback.responder = lambda body: f"reply number {next(counter)}"
    loopback.latency = 0.2
    gateway = make_gateway()
    first, second = await asyncio.gather(gateway.complete("judge", MSG), gateway.complete("judge", MSG))
    assert len(loopback.requests) == 1 and first.text == second.text == "reply number 0"
    assert gateway.ledger.totals()["calls_sent"] == 1  # the second call was answered without sending
    # A failure is shared the same way, and not cached: a later call sends again.
    gateway.config.retry.transient_attempts = 1
    loopback.inject("500")
    failed = await asyncio.gather(*(gateway.complete("judge", [{"role": "user", "content": "other"}])
                                    for _ in range(2)))
    assert [r.ok for r in failed] == [False, False] and len(loopback.requests) == 2


async def test_a_call_that_misses_the_cache_just_as_its_twin_finishes_is_not_sent_again(make_gateway, loopback):
    """Two shards asking the same thing from two threads: one looks in the cache and finds nothing, the other
    then stores its reply and leaves the in-flight table before the first looks there. The first must find
    the reply, not send the request a second time (paid twice, and a sampling model's two answers would make
    the cache disagree with what one of the shards used)."""
    import itertools

    counter = itertools.count()
    loopback.responder = lambda body: f"reply number {next(counter)}"
    gateway = make_gateway()
    first = await gateway.complete("judge", MSG)
    assert first.text == "reply number 0" and len(loopback.requests) == 1
    assert gateway.cache is not None
    looked_up, real_get = [], gateway.cache.get

    def too_early(key: str):
        looked_up.append(key)
        return None if len(looked_up) == 1 else real_get(key)  # the first look came before the twin stored

    gateway.cache.get = too_early  # type: ignore[method-assign]
    second = await gateway.complete("judge", MSG)
    assert len(looked_up) >= 2, "the call never looked again"
    assert len(loopback.requests) == 1 and second.text == "reply number 0"


async def test_two_runs_sharing_a_cache_send_a_request_they_both_make_once(make_gateway, loopback):
    """Two runs at once on one call cache (two processes; here two gateways, each with its own connection): the
    run that claims a request sends it, the other waits for its reply in the cache. Both sent it before: paid
    twice, and a sampling model's two answers left one run's tables unlike what its rerun reads back."""
    import itertools

    counter = itertools.count()
    loopback.responder = lambda body: f"reply number {next(counter)}"
    loopback.latency = 0.3
    one, other = make_gateway(), make_gateway()
    asks = [[{"role": "user", "content": f"line {i}"}] for i in range(6)]
    mine, theirs = await asyncio.wait_for(asyncio.gather(
        asyncio.gather(*(one.complete("judge", m) for m in asks)),
        asyncio.gather(*(other.complete("judge", m) for m in asks))), 60)
    assert len(loopback.requests) == 6, len(loopback.requests)
    assert [r.text for r in mine] == [r.text for r in theirs] and all(r.ok for r in mine + theirs)
    sent = one.ledger.totals()["calls_sent"] + other.ledger.totals()["calls_sent"]
    assert sent == 6  # each request counted (and paid) by the run that sent it


async def test_a_claim_left_by_a_process_that_is_gone_is_taken_over_at_once(make_gateway, loopback):
    """A run killed while sending leaves its claims behind: the next run must send those requests, not wait."""
    import subprocess
    import sys
    import time

    from rpbench.tasks.llm.cache import HOST, Claim

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gateway = make_gateway()
    assert gateway.cache is not None
    first = await gateway.complete("judge", MSG)  # learns the request's key (then forgotten below)
    key = next(iter(gateway._written))
    with gateway.cache._lock:
        gateway.cache._conn.execute("DELETE FROM calls")
        gateway.cache._conn.execute("INSERT INTO claims (key, owner, at) VALUES (?, ?, ?)",
                                    (key, f"{HOST}:{gone.stdout.strip()}:killed", time.time()))  # just now
    gateway._written.clear()
    assert Claim(f"{HOST}:{os.getpid()}:alive", time.time()).abandoned(600) is False  # a live one is waited for
    again = await asyncio.wait_for(gateway.complete("judge", MSG), 60)
    assert again.ok and again.text == first.text and len(loopback.requests) == 2


async def test_when_the_run_sending_a_request_fails_the_waiting_run_sends_it(make_gateway, loopback):
    """A claim ends with its request's failure: the other run then sends the request itself."""
    loopback.latency = 0.3
    one, other = make_gateway(), make_gateway()
    for gateway in (one, other):
        gateway.config.retry.transient_attempts = 1
    loopback.inject("500")  # the first request sent fails
    results = await asyncio.wait_for(asyncio.gather(one.complete("judge", MSG), other.complete("judge", MSG)), 60)
    assert sorted(r.ok for r in results) == [False, True] and len(loopback.requests) == 2


async def test_a_refused_key_stops_every_call_to_that_model_at_once(make_gateway, loopback):
    """A 401 is never retried, and no later call to the model is sent: each would be refused the same way."""
    from rpbench.tasks.core.errors import ModelUnusable

    gateway = make_gateway(max_concurrency=1)
    loopback.model_faults["loopback-model"] = "401"
    calls = [gateway.complete("judge", [{"role": "user", "content": f"q{i}"}]) for i in range(5)]
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(r, ModelUnusable) for r in results), results
    assert len(loopback.requests) == 1  # one refusal; the four waiting for the slot were never sent
    message = str(results[0])
    assert message.startswith("model openai/loopback-model (role judge) cannot be used: AuthenticationError")
    assert message.endswith(f"its key is read from {TEST_KEY_ENV}")
    assert os.environ[TEST_KEY_ENV] not in message  # the server echoed the key back; it is masked
    with pytest.raises(ModelUnusable):  # later calls too, without sending
        await gateway.complete("judge", [{"role": "user", "content": "later"}])
    assert len(loopback.requests) == 1
    loopback.model_faults.clear()


def test_which_errors_stop_a_run():
    import litellm

    from rpbench.tasks.llm.transient import MissingKeyError, is_fatal, is_transient

    refused = litellm.AuthenticationError("Incorrect API key", llm_provider="openai", model="m")
    # litellm reports OpenAI's missing key as a 500 and Gemini's as a connection error: both are fatal.
    no_openai_key = litellm.InternalServerError("OpenAIException - Missing credentials. Please pass an `api_key`",
                                                llm_provider="openai", model="m")
    no_gemini_key = litellm.APIConnectionError("Missing Gemini API key. Set the GEMINI_API_KEY", llm_provider="gemini",
                                               model="m")
    down = litellm.InternalServerError("server error", llm_provider="openai", model="m")
    for exc in (refused, no_openai_key, no_gemini_key, MissingKeyError("X is not set")):
        assert is_fatal(exc) and not is_transient(exc), exc
    assert is_transient(down) and not is_fatal(down)


async def test_a_reply_that_could_not_be_read_gets_one_fresh_round_on_a_rerun(make_gateway, loopback):
    """The earlier run's unreadable replies are in the cache; a rerun tries afresh once (new attempt numbers),
    unless it replays failures (--keep-failures); a later rerun finds that round in the cache too."""
    loopback.responder = lambda body: "not json"
    first = await make_gateway().complete("judge", MSG, schema=Verdict)
    assert not first.ok and first.attempts == 3 and len(loopback.requests) == 3
    loopback.responder = lambda body: json.dumps({"reason": "fine", "score": 4})
    replay = make_gateway()
    replay.heal = False
    kept = await replay.complete("judge", MSG, schema=Verdict)
    assert not kept.ok and kept.cached and len(loopback.requests) == 3  # the same failure, nothing sent
    healed = await make_gateway().complete("judge", MSG, schema=Verdict)
    assert healed.ok and healed.parsed.score == 4 and len(loopback.requests) == 4
    assert [r.attempt for r in (await _ledger_of(make_gateway(), Verdict))] == [0, 1, 2, 3]
    assert len(loopback.requests) == 4


async def _ledger_of(gateway, schema):
    await gateway.complete("judge", MSG, schema=schema)
    return gateway.ledger.records()


async def test_a_request_in_flight_at_a_kill_is_journaled_as_sent(make_gateway, loopback, tmp_path):
    """Cost is never under-reported: a request that reached the provider and whose run died before the reply
    is read back from the journal as sent, its tokens and cost unknown; a finished call replaces that line."""
    from rpbench.tasks.llm.ledger import Ledger, read_journal, summarize_calls

    journal = tmp_path / "stage.journal.jsonl"
    gateway = make_gateway().fork(Ledger(journal))
    done = await gateway.complete("judge", [{"role": "user", "content": "answered"}])
    loopback.latency = 1.0
    pending = asyncio.ensure_future(gateway.complete("judge", [{"role": "user", "content": "cut off"}]))
    while len(loopback.requests) < 2:
        await asyncio.sleep(0.05)
    pending.cancel()  # what a kill does to it, as far as the journal can tell
    with contextlib.suppress(asyncio.CancelledError):
        await pending
    records = read_journal(journal)
    assert [r.outcome for r in records] == ["ok", "interrupted"] and done.ok
    cut = records[1]
    assert not cut.cached and cut.prompt_tokens is None and cut.cost_usd is None and "in flight" in cut.error
    totals = summarize_calls(records)
    assert totals["calls_sent"] == 2 == len(loopback.requests) and totals["interrupted"] == 1
    assert totals["cost_unknown_calls"] >= 1


async def test_a_reply_shared_within_one_run_is_not_healed(make_gateway, loopback):
    """Two roles on one model asking the same thing in one run: the second reads the first's unreadable replies
    from the cache, which is this run's own failure, not an earlier run's: nothing is sent again (a rerun would
    otherwise depend on which of the two asked first)."""
    loopback.responder = lambda body: "not json"
    gateway = make_gateway()
    first = await gateway.complete("judge", MSG, schema=Verdict)
    second = await gateway.fork().complete("director", MSG, schema=Verdict)
    assert not first.ok and not second.ok and len(loopback.requests) == 3


def test_a_fork_shares_the_declared_state_and_nothing_else():
    """Forks (one per stage) share what SharedState declares, the very objects, and keep the rest their own: a
    stage's name, batch status, ledger and worker pools never leak into another stage's."""
    import dataclasses

    from rpbench.tasks.llm.config import ModelsConfig
    from rpbench.tasks.llm.gateway import Gateway

    parent = Gateway(ModelsConfig())
    parent.heal = False
    one, two = parent.fork(), parent.fork()
    assert one.shared is two.shared is parent.shared and one.heal is False
    for f in dataclasses.fields(parent.shared):
        assert getattr(one.shared, f.name) is getattr(parent.shared, f.name)
    one.stage, one.batch_status = "judge", "batch 1 of 2"
    one._held[2] = object()  # type: ignore[assignment]
    assert (two.stage, two.batch_status, two._held) == ("", "", {}) and parent.stage == ""
    assert one.ledger is not two.ledger is not parent.ledger
    one._written.add("k")  # shared: another stage's hit on this key is this run's own reply
    assert "k" in two._written
    shared_ids = {id(getattr(parent.shared, f.name)) for f in dataclasses.fields(parent.shared)}
    own = {name for name, value in vars(one).items() if isinstance(value, dict | set | list)
           and id(value) not in shared_ids}
    assert own == {"_held"}  # every mutable the fork holds is its own or declared shared
