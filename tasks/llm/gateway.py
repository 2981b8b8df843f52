"""The one door every LLM call goes through.

``Gateway.complete(role, messages, schema=...)`` resolves the role to a model
spec, answers from the call cache when it can, otherwise sends the request
through ``litellm.acompletion`` under the model's concurrency and rate bounds,
retrying transient errors with exponential backoff and jitter (the only retry
layer: litellm's own retries are off). When a schema is given, the reply is
parsed and validated; an unusable reply is shown back to the model with the
error, a bounded number of times, and then reported as a failure carrying the
raw text. Nothing is ever replaced by a default. A model that cannot be used at
all (a missing or refused key, a model the provider does not know) raises
``ModelUnusable`` on its first such reply, and every later call to it raises at
once without sending: the run stops instead of failing every item.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

import aiohttp
from pydantic import BaseModel

from rpbench.tasks.core.errors import ModelUnusable, plain_error
from rpbench.tasks.core.records import CallRecord
from rpbench.tasks.core.secrets import scrub_text
from rpbench.tasks.llm.batches import BATCH_CLAIM_S, BatchEndpointFailed, Item, send_batch
from rpbench.tasks.llm.bounds import bounds_for
from rpbench.tasks.llm.budget import Budget
from rpbench.tasks.llm.cache import CallCache, request_key
from rpbench.tasks.llm.config import ModelsConfig, ModelSpec, role_shown
from rpbench.tasks.llm.ledger import Ledger, next_call_id
from rpbench.tasks.llm.local.models import PROVIDER as LOCAL_PROVIDER
from rpbench.tasks.llm.local.models import model_fingerprint
from rpbench.tasks.llm.process_pool import ProcessPool, acquire_pool, release_pool
from rpbench.tasks.llm.prompt_cache import PrefixMemory, with_cache_marks
from rpbench.tasks.llm.provider_schema import batch_provider, family_of, response_format
from rpbench.tasks.llm.requests import CallResult, Message, NoReply, Parser, Reply, Request
from rpbench.tasks.llm.run_context import RunContext, context_for_a_gateway
from rpbench.tasks.llm.stopping import gate, on_the_wire
from rpbench.tasks.llm.structured import (
    ASK_AGAIN,
    ASK_JSON,
    ASK_PLAIN,
    parse_reply,
    repair_messages,
    schema_instruction,
    stated_in_prompt,
    with_reasoning_cap,
)

T = TypeVar("T")
# Set once this process has sent a request: from then on the run waits on its models, and work that does not need
# them (the report's imports, ``flows.kit.running.run``) can use the time.
requests_waiting = threading.Event()

M = TypeVar("M", bound=BaseModel)


@functools.lru_cache(maxsize=1024)
def _listed_price(model: str, key: str) -> float | None:
    """A per-token price from litellm's price map, or None when it lists none for the model."""
    import litellm

    try:
        value: Any = litellm.get_model_info(model).get(key)
    except Exception:
        return None
    return float(value) if value is not None else None


def _listed_pair(model: str, prompt_key: str, reply_key: str) -> tuple[float, float] | None:
    price_in, price_out = _listed_price(model, prompt_key), _listed_price(model, reply_key)
    return (price_in, price_out) if price_in is not None and price_out is not None else None


def prices_of(spec: ModelSpec) -> tuple[float, float] | None:
    """USD per input and output token: 0 for the embedded model, the config's prices if given, else litellm's
    price map, else unknown (None)."""
    if spec.model.startswith(LOCAL_PROVIDER + "/"):
        return 0.0, 0.0
    if spec.input_cost_per_token is not None and spec.output_cost_per_token is not None:
        return spec.input_cost_per_token, spec.output_cost_per_token
    return _listed_pair(spec.model, "input_cost_per_token", "output_cost_per_token")


def batch_prices_of(spec: ModelSpec) -> tuple[float, float] | None:
    """USD per input and output token of a batch: the config's batch prices, else litellm's, else the interactive
    prices (``prices_of``): never less than what is paid."""
    if spec.batch_input_cost_per_token is not None and spec.batch_output_cost_per_token is not None:
        return spec.batch_input_cost_per_token, spec.batch_output_cost_per_token
    return _listed_pair(spec.model, "input_cost_per_token_batches", "output_cost_per_token_batches") or prices_of(spec)


def cached_prompt_price(spec: ModelSpec, prices: tuple[float, float]) -> float:
    """USD per prompt token the provider read from its cache: the config's, else litellm's, else the full input
    price (never less than what is paid)."""
    if spec.cached_input_cost_per_token is not None:
        return spec.cached_input_cost_per_token
    found = _listed_price(spec.model, "cache_read_input_token_cost")
    return found if found is not None else prices[0]


def cache_write_price(spec: ModelSpec, prices: tuple[float, float]) -> float:
    """USD per prompt token written to the provider's prompt cache (Anthropic bills it above the input price):
    the config's, else litellm's, else the input price."""
    if spec.cache_write_cost_per_token is not None:
        return spec.cache_write_cost_per_token
    found = _listed_price(spec.model, "cache_creation_input_token_cost")
    return found if found is not None else prices[0]


def call_cost(spec: ModelSpec, prompt_tokens: int, completion_tokens: int, batch: bool = False,
              cached_prompt_tokens: int | None = None, cache_write_tokens: int | None = None) -> float | None:
    """Cost in USD (see ``prices_of``, ``batch_prices_of``): the prompt tokens the provider read from its cache
    at the cached price, those it wrote to it at the write price; None when the price is unknown."""
    prices = batch_prices_of(spec) if batch else prices_of(spec)
    if prices is None:
        return None
    cached = min(cached_prompt_tokens or 0, prompt_tokens)
    written = min(cache_write_tokens or 0, prompt_tokens - cached)
    return (prices[0] * (prompt_tokens - cached - written) + cached_prompt_price(spec, prices) * cached
            + cache_write_price(spec, prices) * written + prices[1] * completion_tokens)


def _plain(exc: BaseException) -> str:
    """An error as one short line, its type named once, any key the provider echoed masked."""
    return plain_error(scrub_text(f"{type(exc).__name__}: {str(exc).strip()}"))


@dataclass
class SharedState:
    """What every fork of one gateway shares, by design and in one place: the process's view of the calls in
    flight and of the models that failed. A fork (a stage) holds this object; everything else it has is its own.

    ``sessions``: one pooled HTTP session per event loop (weakly keyed: a dead loop's goes with it).
    ``in_flight``: requests being sent now, by cache key (``_shared``: a twin waits for the one that sends).
    ``written``: cache keys this process sent and stored: a cache hit on one is this run's own reply (two models
    asking the same thing), not an earlier run's, so it is no reason to heal.
    ``unusable``: models found unusable (a refused or missing key, a model the provider does not know), by model
    and endpoint: later calls to them stop at once instead of sending.
    ``batched``: replies a batch of this run brought, by cache key, until the call that asked is made.
    ``batching``: keys in a batch some stage has in flight, each with the batch's end: another stage asking one
    waits for that batch rather than sending (and paying for) it again. Under ``lock``, with ``in_flight``.
    ``prefixes``: recent prompts, to mark the prefixes Anthropic should cache."""

    sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = field(
        default_factory=weakref.WeakKeyDictionary)
    in_flight: dict[str, concurrent.futures.Future[dict[str, Any]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    written: set[str] = field(default_factory=set)
    unusable: dict[tuple[str, str | None], ModelUnusable] = field(default_factory=dict)
    batched: dict[str, dict[str, Any]] = field(default_factory=dict)
    batching: dict[str, concurrent.futures.Future[None]] = field(default_factory=dict)
    prefixes: PrefixMemory = field(default_factory=PrefixMemory)


class Gateway:
    """Role-addressed, cached, bounded, retried access to any litellm model."""

    def __init__(self, config: ModelsConfig, cache: CallCache | None = None, ledger: Ledger | None = None,
                 shared: SharedState | None = None) -> None:
        self.config = config
        self.cache = cache
        self.ledger = ledger or Ledger()
        self.shared = shared or SharedState()
        # The shared state under the names the methods use (the objects themselves: never rebound).
        self._sessions, self._in_flight, self._in_flight_lock = (self.shared.sessions, self.shared.in_flight,
                                                                 self.shared.lock)
        self._written, self._unusable, self._prefixes = self.shared.written, self.shared.unusable, self.shared.prefixes
        self._batched, self._batching = self.shared.batched, self.shared.batching
        # The run this gateway's calls belong to (a plan or a real run, its budget, --batch), taken as it is made:
        # a stage's fork, made in the stage's thread, answers to the run that started the stage.
        self.context: RunContext = context_for_a_gateway()
        # Outside any run (a gateway used directly), role budgets still hold, for this gateway's calls.
        self.budget: Budget = self.context.budget or Budget()
        # This fork's own. The worker process pools it uses, by size; the workers are the process's, shared with
        # every other stage (see ``process_pool``), and given back in ``aclose``.
        self._held: dict[int, ProcessPool] = {}
        # A rerun gives a call whose every earlier attempt failed to parse (all served from the cache) a fresh
        # round of attempts; off for an exact replay of an earlier run's failures (--keep-failures).
        self.heal = True
        self.stage = ""  # the stage this fork calls for (a plan counts calls by stage)
        # Whether this fork's stage makes independent calls (no call waits on another's reply): a role with
        # ``batch`` then sends those of ``run_all`` as one batch. Dialogue stages stay interactive.
        self.batchable = False
        self.batch_status = ""  # where this fork's batch in flight stands, for the stage's progress line
        # litellm (seconds to import) comes in with the first gateway, not with every module that names one.
        from rpbench.tasks.llm.litellm_call import tune_litellm
        from rpbench.tasks.llm.local.provider import register_local_provider

        tune_litellm()
        register_local_provider(config.local_models)

    def forget_written(self) -> None:
        """From now on, replies stored so far count as an earlier run's (a new flow run in this process)."""
        self._written.clear()

    def fork(self, ledger: Ledger | None = None) -> Gateway:
        """A gateway of the same config and cache, sharing this one's ``SharedState`` and nothing else: its own
        accounting (each stage records its calls in a ledger of its own, however many run at once), worker pool
        handles, stage name, batch status, and this one's ``heal`` as it stands. It takes the run context of where
        it is made (``run_context``), not this one's: the process's gateway outlives runs, a fork is one stage's."""
        twin = Gateway(self.config, self.cache, ledger or Ledger(), shared=self.shared)
        twin.heal, twin.stage, twin.batchable = self.heal, self.stage, self.batchable
        return twin

    # -- plumbing -------------------------------------------------------------------------------
    def _session(self) -> aiohttp.ClientSession:
        """One pooled HTTP session per event loop, shared by every call on it."""
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            from rpbench.tasks.llm.litellm_call import new_session

            session = new_session()
            self._sessions[loop] = session
        return session

    def _pool_for(self, spec: ModelSpec) -> ProcessPool:
        """The worker processes sending this model's calls (``processes`` > 1): the process's pool of that size."""
        pool = self._held.get(spec.processes)
        if pool is None:
            pool = self._held[spec.processes] = acquire_pool(spec.processes)
        return pool

    async def aclose(self) -> None:
        """Close this event loop's HTTP session and give back the worker pools; the last user stops them."""
        loop = asyncio.get_running_loop()
        session = self._sessions.pop(loop, None)
        if session is not None:
            await session.close()
        held, self._held = self._held, {}
        for pool in held.values():
            if release_pool(pool):
                await asyncio.to_thread(pool.close)

    def _response_format(self, spec: ModelSpec, schema: type[Any] | None) -> dict[str, Any] | None:
        if schema is None or self._structured_mode(spec) == "prompt":
            return None
        if stated_in_prompt(schema) and spec.structured == "auto" and not spec.model.startswith(LOCAL_PROVIDER + "/"):
            return None  # sent as the release sends it; a local model is still held to the schema as it decodes
        if self._structured_mode(spec) == "json_object":
            return {"type": "json_object"}
        # The schema in the form the model's provider family accepts (OpenAI strict, Gemini's subset, ...).
        return response_format(schema, spec.schema_rules or family_of(spec.model))

    @staticmethod
    def _structured_mode(spec: ModelSpec) -> str:
        if spec.structured != "auto":
            return spec.structured
        if spec.model.startswith(LOCAL_PROVIDER + "/"):
            return "json_schema"
        import litellm

        try:
            return "json_schema" if litellm.supports_response_schema(model=spec.model) else "prompt"
        except Exception:  # unknown models (e.g. a vLLM server) are asked in the prompt
            return "prompt"

    async def _send(
        self, spec: ModelSpec, messages: list[Message], response_format: dict[str, Any] | None, record: CallRecord
    ) -> dict[str, Any]:
        """One completed model reply, after as many transient retries as the policy allows.

        ``record.transient_retries`` counts the retries as they happen, so a call that fails after all of
        them records how many it made.
        """
        from rpbench.tasks.llm.litellm_call import add_transport, request_kwargs, send
        from rpbench.tasks.llm.transient import is_transient, retrying

        policy = self.config.retry
        if family_of(spec.model) == "anthropic":  # Anthropic caches a prompt only up to a marked block
            messages = with_cache_marks(messages, self._prefixes, (self.stage, record.role))
        kwargs = request_kwargs(spec, messages, response_format)
        pool = self._pool_for(spec) if spec.processes > 1 else None
        bounds = bounds_for(spec.endpoint(), spec.max_concurrency, spec.rpm)

        async def attempt_once() -> tuple[dict[str, Any], float]:
            async with bounds.hold():
                if (known := self._unusable.get((spec.model, spec.api_base))) is not None:
                    raise known  # found unusable while this call waited for its slot: do not send it
                await gate()  # the run was stopped while this call waited for its slot (or a retry)
                started = time.perf_counter()
                with on_the_wire():
                    if pool is not None and pool.ready():
                        fields = await pool.call(kwargs, spec.api_key_env)
                    else:
                        if pool is not None:
                            pool.start_soon()  # sent from here meanwhile: the same request, read the same way
                        fields = await send(add_transport(kwargs, spec.api_key_env, self._session()))
                return fields, time.perf_counter() - started

        try:
            # The common case needs no retry machinery: try once, directly.
            reply, latency = await attempt_once()
        except Exception as exc:
            if not is_transient(exc) or policy.transient_attempts <= 1:
                raise
            async for attempt in retrying(policy, policy.transient_attempts - 1):
                with attempt:
                    record.transient_retries = attempt.retry_state.attempt_number
                    if record.transient_retries == 1:
                        # tenacity waits only between its own attempts; wait before the first retry too.
                        await asyncio.sleep(min(policy.backoff_initial * (1 + random.random()), policy.backoff_max))
                    reply, latency = await attempt_once()
        n_in, n_out = reply["prompt_tokens"], reply["completion_tokens"]
        # None when the price is unknown: recorded as unknown, never as free.
        cost = call_cost(spec, n_in, n_out or 0, cached_prompt_tokens=reply.get("cached_prompt_tokens"),
                         cache_write_tokens=reply.get("cache_write_tokens")) if n_in is not None else None
        return {**reply, "latency_s": latency, "cost_usd": cost}

    async def _reply(self, spec: ModelSpec, record: CallRecord, convo: list[Message],
                     response_format: dict[str, Any] | None, sample_index: int = 0,
                     plan_schema: dict[str, Any] | None = None, ends: str | None = None,
                     attempts: int | None = None) -> dict[str, Any]:
        """The reply to one attempt, from the first of: this run's batch, the cache, a plan's stand-in, a twin
        request in flight, the model (``_shared``). A permanent failure raises."""
        batched = self._batched.pop(record.cache_key, None)
        if batched is not None:  # sent by this run, in a batch: paid for here
            record.cached = False
            self._written.add(record.cache_key)
            return batched
        cached = self.cache.get(record.cache_key) if self.cache is not None else None
        if self.context.plan is not None:  # a plan: nothing is sent, nothing is stored; every request is counted
            return self._planned(spec, record, convo, cached, plan_schema, ends, attempts)
        if cached is not None:
            return cached
        return await self._shared(spec, record, convo, response_format, sample_index, plan_schema, ends, attempts)

    def _planned(self, spec: ModelSpec, record: CallRecord, convo: list[Message], cached: dict[str, Any] | None,
                 plan_schema: dict[str, Any] | None, ends: str | None, attempts: int | None) -> dict[str, Any]:
        """A plan's reply: the cached one (counted as free) or a stand-in (counted at its price)."""
        plan = self.context.plan
        assert plan is not None
        if cached is not None:
            plan.from_cache(self.stage, record.role, spec.model, cached, prices_of(spec))
            return cached
        record.cached = False
        batch = self._batches(spec)
        return plan.stand_in(self.stage, record.role, spec.model, family_of(spec.model), record.cache_key,
                             convo, plan_schema, spec.max_tokens, batch_prices_of(spec) if batch else prices_of(spec),
                             attempts or self.config.retry.parse_attempts,
                             "batch" if batch else "interactive" if self._wants_batch(spec) else "", ends)

    async def _shared(self, spec: ModelSpec, record: CallRecord, convo: list[Message],
                      response_format: dict[str, Any] | None, sample_index: int, plan_schema: dict[str, Any] | None,
                      ends: str | None, attempts: int | None) -> dict[str, Any]:
        """De-duplication across threads: identical requests in flight at the same time (two models whose
        answers coincide, judged at once) are sent once and share the reply. Sent twice, a sampling model could
        answer each differently while the cache keeps only one answer, and a rerun would read back another."""
        mine: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
        with self._in_flight_lock:  # one look at both, so a batch cannot take the key between them
            batching = self._batching.get(record.cache_key)
            shared = self._in_flight.get(record.cache_key) if batching is None else None
            if batching is None and shared is None:
                self._in_flight[record.cache_key] = mine
        if batching is not None:  # in another stage's batch, in flight: its reply comes from there
            await asyncio.wrap_future(batching)
            return await self._reply(spec, record, convo, response_format, sample_index, plan_schema, ends, attempts)
        if shared is not None:
            return await asyncio.wrap_future(shared)  # answered by the call that sent it (cached stays True)
        try:
            reply = await self._sent(spec, record, convo, response_format, sample_index)
            mine.set_result(reply)
            return reply
        except BaseException as exc:
            mine.set_exception(exc)
            mine.exception()  # retrieved: no "never retrieved" warning when nobody else was waiting
            raise
        finally:
            with self._in_flight_lock:
                self._in_flight.pop(record.cache_key, None)

    async def _sent(self, spec: ModelSpec, record: CallRecord, convo: list[Message],
                    response_format: dict[str, Any] | None, sample_index: int) -> dict[str, Any]:
        """The model's reply, sent by this process: unless another process sharing the cache sends it (the
        claim), once the run may send (not stopped) and the budget holds what it may cost; stored in the cache."""
        reserved: float | None = None
        cost, claimed = None, False
        requests_waiting.set()
        try:
            if self.cache is not None:
                # A twin on another thread may have stored its reply and left the table between this call's look
                # in the cache and its look in the table: look again, now that a later twin would wait for this.
                if (stored := self.cache.get(record.cache_key)) is not None:
                    return stored
                claimed, stored = await self._claim(spec, record.cache_key)
                if stored is not None:  # the same request sent by another process sharing the cache: its reply
                    return stored
            await gate()  # a stopped run sends nothing new (and journals nothing as sent)
            if self.budget.active(spec.max_cost):  # what it may cost, reserved (or the run stops, sending nothing)
                reserved = await self.budget.reserve(record.role, spec.model, spec.max_cost, prices_of(spec), [convo],
                                                     spec.max_tokens)
            record.cached = False
            self.ledger.sending(record)
            if sample_index and spec.seed is not None:
                # A seeded model answers the same request the same way: each sample index sends its own seed,
                # so the samples differ (the cache key keeps the index and the spec's own seed).
                spec = spec.model_copy(update={"seed": spec.seed + sample_index})
            reply = await self._send(spec, convo, response_format, record)
            cost = reply["cost_usd"]
            if self.cache is not None:
                self.cache.put(record.cache_key, reply)  # (which ends the claim)
                self._written.add(record.cache_key)
                claimed = False
            return reply
        finally:
            if claimed and self.cache is not None:  # no reply stored: another process may send it now
                self.cache.release(record.cache_key)
            if reserved is not None:
                self.budget.settle(record.role, reserved, cost)

    async def _claim(self, spec: ModelSpec, key: str) -> tuple[bool, dict[str, Any] | None]:
        """Claim the sending of ``key`` in the cache: (True, None) once this process holds the claim and sends;
        (False, reply) when another process sharing the cache was sending it and has stored its reply. A claim
        whose process is gone, or older than every try of the request could take, is taken over."""
        assert self.cache is not None
        patience = self._patience(spec)
        pause = 0.05
        while True:
            held = self.cache.claim(key)
            if held is None or (held.abandoned(patience) and self.cache.take_over(key, held)):
                stored = self.cache.get(key)  # stored by its sender just before this claim
                if stored is not None:
                    self.cache.release(key)
                return stored is None, stored
            await asyncio.sleep(pause)  # its reply comes within the sender's latency: look again soon
            pause = min(1.0, pause * 2)
            stored = self.cache.get(key)
            if stored is not None:
                return False, stored

    # -- public ---------------------------------------------------------------------------------
    def model_of(self, role: str) -> str:
        return self.config.for_role(role).model

    @overload
    async def complete(self, role: str, messages: list[Message], *, schema: type[M],
                       sample_index: int = 0, tag: str | None = None, parse: None = None) -> CallResult[M]: ...

    @overload
    async def complete(self, role: str, messages: list[Message], *, schema: None = None,
                       sample_index: int = 0, tag: str | None = None,
                       parse: Parser | None = None) -> CallResult[Any]: ...

    async def complete(
        self,
        role: str,
        messages: list[Message],
        *,
        schema: type[BaseModel] | None = None,
        sample_index: int = 0,
        tag: str | None = None,
        parse: Parser | None = None,
    ) -> CallResult[Any]:
        """Ask the model bound to ``role``; see the module docstring for the guarantees."""
        return await self._complete(role, messages, schema, sample_index, tag, parse)

    async def _complete(self, role: str, messages: list[Message], schema: type[BaseModel] | None,
                        sample_index: int, tag: str | None, parse: Parser | None = None,
                        ends: str | None = None, attempts: int | None = None,
                        sampling: Mapping[str, Any] | None = None) -> CallResult[Any]:
        if schema is not None and parse is not None:
            raise ValueError("a request reads its reply by a schema or by a parser, not both")
        self.ledger.begin()
        try:
            return await self._complete_counted(role, messages, schema, sample_index, tag, parse, ends, attempts,
                                                sampling)
        finally:
            self.ledger.end()

    async def _complete_counted(self, role: str, messages: list[Message], schema: type[BaseModel] | None,
                                sample_index: int, tag: str | None, parse: Parser | None,
                                ends: str | None = None, attempts: int | None = None,
                                sampling: Mapping[str, Any] | None = None) -> CallResult[Any]:
        spec = self.config.for_role(role)
        if sampling:  # this request's own sampling (a release that resamples at another temperature)
            spec = spec.model_copy(update=dict(sampling))
        if (known := self._unusable.get((spec.model, spec.api_base))) is not None:
            raise ModelUnusable(role_shown(role), spec.model, known.error, spec.api_key_env)
        schema, response_format, convo = self._prepared(spec, messages, schema)
        raw: list[str] = []
        error = "no attempt was made (parse_attempts is 0)"
        # What a plan's stand-in reply follows: the schema's own rules (a provider's form may loosen them), or the
        # reply the schema offers for it where a rule is beyond a JSON schema (a ranking that is a permutation).
        plan_schema = None
        if self.context.plan is not None and schema is not None:
            plan_schema = ({"const": schema.stand_in_reply()} if hasattr(schema, "stand_in_reply")
                           else schema.model_json_schema())
        all_cached = True
        per_round = attempts or self.config.retry.parse_attempts
        start, attempt, limit, fresh = convo, 0, per_round, False
        while attempt < limit:
            if attempt and attempt % per_round == 0:  # a fresh round starts from the request itself
                convo = start
            key = self._key(spec, convo, response_format, sample_index, attempt)
            record = CallRecord(call_id=next_call_id(), cache_key=key, role=role, model=spec.model, tag=tag,
                                attempt=attempt, cached=True, outcome="ok")
            try:
                reply = await self._reply(spec, record, convo, response_format, sample_index, plan_schema, ends,
                                          per_round)
            except ModelUnusable:
                known = self._unusable.get((spec.model, spec.api_base))
                if known is None:  # a budget reached, a price unknown under a budget: as raised
                    raise
                raise ModelUnusable(role_shown(role), spec.model, known.error, spec.api_key_env) from None
            except Exception as exc:  # permanent error, or transient retries exhausted: a failure, not a default
                # Some providers echo the key in their error text: mask it before it is stored anywhere.
                record.outcome, record.error = "failed", scrub_text(f"{type(exc).__name__}: {exc}")[:500]
                self.ledger.add(record)
                from rpbench.tasks.llm.transient import is_fatal

                if is_fatal(exc):  # no later call to this model can succeed: stop the run here
                    unusable = ModelUnusable(role_shown(role), spec.model, _plain(exc), spec.api_key_env)
                    self._unusable.setdefault((spec.model, spec.api_base), unusable)
                    raise unusable from None
                self.ledger.unanswered += 1
                return NoReply(role, spec.model, raw[-1] if raw else None, record.error, attempt + 1,
                               raw_replies=tuple(raw))
            all_cached = all_cached and record.cached
            # A reply this run sent, or shared from a request of this run, is not an earlier run's failure.
            fresh = fresh or not record.cached or record.cache_key in self._written
            record.prompt_tokens, record.completion_tokens = reply["prompt_tokens"], reply["completion_tokens"]
            record.cached_prompt_tokens = reply.get("cached_prompt_tokens")
            record.latency_s, record.cost_usd = reply["latency_s"], reply["cost_usd"]
            text: str = reply["text"]
            raw.append(text)
            attempt += 1
            try:
                if not text.strip():
                    raise ValueError("the reply is empty")
                parsed = parse_reply(text, schema) if schema is not None else parse(text) if parse else None
            except ValueError as exc:
                record.outcome, record.error = "parse_error", str(exc)[:500]
                self.ledger.add(record)
                error = str(exc)
                if reply.get("stand_in"):  # a plan's stand-in, not the model's reply: counted once, not retried
                    if self.context.plan is not None:
                        self.context.plan.unreadable(self.stage, role, spec.model)
                    self.ledger.unanswered += 1
                    return NoReply(role, spec.model, text, error, attempt, raw_replies=tuple(raw))
                convo = repair_messages(convo, text, error,
                                        ASK_JSON if schema is not None else ASK_AGAIN if parse else ASK_PLAIN)
                if attempt == per_round and self.heal and not fresh:
                    # Every reply of the first round came from the cache and none could be read: an earlier run's
                    # failure, which this run tries afresh, once (new attempt numbers, so new requests; a later
                    # rerun finds that round cached too and sends nothing).
                    limit += per_round
                continue
            self.ledger.add(record)
            return Reply(role, spec.model, text, parsed, len(raw), all_cached, tuple(raw))
        self.ledger.unanswered += 1
        return NoReply(role, spec.model, raw[-1] if raw else None, error, len(raw), all_cached, tuple(raw))

    def _prepared(self, spec: ModelSpec, messages: list[Message], schema: type[BaseModel] | None
                  ) -> tuple[type[BaseModel] | None, dict[str, Any] | None, list[Message]]:
        """The schema as this model is held to it, the response format sent, and the messages of a first
        attempt (a schema the provider cannot be given is described in the last message)."""
        if schema is not None and spec.reasoning_chars is not None:
            schema = with_reasoning_cap(schema, spec.reasoning_chars)
        response_format = self._response_format(spec, schema)
        convo = list(messages)
        if schema is not None and response_format is None and not stated_in_prompt(schema):
            convo = [*convo[:-1], {**convo[-1], "content": f"{convo[-1]['content']}\n\n{schema_instruction(schema)}"}]
        return schema, response_format, convo

    @staticmethod
    def _key(spec: ModelSpec, convo: list[Message], response_format: dict[str, Any] | None, sample_index: int,
             attempt: int) -> str:
        """The cache key of one attempt: what a batch files a request under is what the call then looks up."""
        return request_key(model=model_fingerprint(spec.model), api_base=spec.api_base, messages=convo,
                           sampling=spec.sampling(), sample_index=sample_index, attempt=attempt,
                           response_schema=response_format)

    def _wants_batch(self, spec: ModelSpec) -> bool:
        return spec.batch or self.context.batch_every_role

    def _batches(self, spec: ModelSpec) -> bool:
        """Whether this stage sends ``spec``'s independent calls as a batch."""
        return self.batchable and self._wants_batch(spec) and batch_provider(spec.model) is not None

    async def _send_batches(self, requests: Sequence[Request[Any]]) -> None:
        """The first attempts of ``requests`` for roles that batch, not yet in the cache, sent as one batch per
        model; their replies go into the cache and ``_batched`` (the calls then find them)."""
        if self.cache is None:
            return
        groups: dict[tuple[str, str | None], tuple[ModelSpec, str, dict[str, Item]]] = {}
        for req in requests:
            spec = self.config.for_role(req.role)
            if not self._batches(spec) or req.sampling:  # a request of its own sampling is asked alone
                continue
            _schema, response_format, convo = self._prepared(spec, req.messages, req.schema)
            key = self._key(spec, convo, response_format, req.sample_index, 0)
            group = groups.setdefault((spec.model, spec.api_base), (spec, req.role, {}))
            if key not in group[2] and key not in self._batched and self.cache.get(key) is None:
                group[2][key] = (key, convo, response_format, req.sample_index)
        for spec, role, items in groups.values():
            ended: concurrent.futures.Future[None] = concurrent.futures.Future()
            items = self._take_for_batch(spec, items, ended)
            if not items:
                ended.set_result(None)  # a call that looked at a key it marked for a moment goes on
                continue
            try:
                # (A reply stored meanwhile by a process that held the claim until then is not asked again.)
                todo = {k: item for k, item in items.items() if self.cache.get(k) is None}
                if todo:
                    renewing = asyncio.create_task(self._renew_claims())
                    try:
                        await self._send_batch(spec, role, todo)
                    finally:
                        renewing.cancel()
            finally:
                for key in items:  # a line the batch did not answer goes out on its own, claimed again then
                    if self.cache.get(key) is None:
                        self.cache.release(key)
                with self._in_flight_lock:
                    for key in items:
                        self._batching.pop(key, None)
                ended.set_result(None)

    def _take_for_batch(self, spec: ModelSpec, items: dict[str, Item],
                        ended: concurrent.futures.Future[None]) -> dict[str, Item]:
        """The items this stage's batch sends, each marked as in it until ``ended``: not in another stage's
        batch, nor sent alone, in this process now, and claimed in the cache, so another process sharing it
        does not batch or send them too (a call there waits for the reply, as for an interactive request in
        flight). The others are left to their sender; a claim left by a process that is gone is taken over."""
        assert self.cache is not None
        with self._in_flight_lock:  # looked at and marked at once: two stages cannot both take a key
            items = {k: item for k, item in items.items() if k not in self._batching and k not in self._in_flight}
            self._batching.update(dict.fromkeys(items, ended))
        taken, left = {}, []
        for key, item in items.items():
            held = self.cache.claim(key, longer=BATCH_CLAIM_S)
            if held is None or (held.abandoned(self._patience(spec))
                                and self.cache.take_over(key, held, longer=BATCH_CLAIM_S)):
                taken[key] = item
            else:
                left.append(key)
        with self._in_flight_lock:
            for key in left:
                self._batching.pop(key, None)
        return taken

    async def _renew_claims(self) -> None:
        """Keep this process's batch claims standing while it waits for its batches (until cancelled)."""
        assert self.cache is not None
        while True:
            await asyncio.sleep(BATCH_CLAIM_S / 4)
            self.cache.renew(BATCH_CLAIM_S)

    def _patience(self, spec: ModelSpec) -> float:
        """How long a claim may stand before it is taken as abandoned: every try the request could take."""
        retry = self.config.retry
        return (spec.timeout + retry.backoff_max) * retry.transient_attempts + 60

    async def _send_batch(self, spec: ModelSpec, role: str, items: dict[str, Item]) -> None:
        """One batch of ``items`` (reserved under the budget whole, before it is submitted); its replies go
        into the cache and ``_batched``, priced at the batch price."""
        assert self.cache is not None
        await gate()
        reserved: float | None = None
        spent = 0.0
        try:
            if self.budget.active(spec.max_cost):  # the whole batch reserved at once, before it is submitted
                reserved = await self.budget.reserve(role, spec.model, spec.max_cost, batch_prices_of(spec),
                                                     [convo for _key, convo, _rf, _i in items.values()],
                                                     spec.max_tokens)
            started = time.perf_counter()
            try:
                batch_id, replies = await send_batch(spec, list(items.values()), self.cache, self.stage or "batch",
                                                     on_poll=lambda status: setattr(self, "batch_status", status),
                                                     policy=self.config.retry)
            except BatchEndpointFailed as exc:  # past its retries: the run ends Failed, in one line (exit 3)
                raise ModelUnusable(role_shown(role), spec.model, (
                    f"{exc.provider}'s batch API failed at {exc.endpoint} after its retries "
                    f"({_plain(exc.error)}); nothing is lost (a batch it made is journaled and polled again): run "
                    f"the same command once {exc.provider} answers, or without batch = true for role "
                    f"{role_shown(role)} to send its calls one by one"), spec.api_key_env) from None
            latency = time.perf_counter() - started
            for key, fields in replies.items():
                n_in, n_out = fields["prompt_tokens"], fields["completion_tokens"]
                cost = call_cost(spec, n_in, n_out or 0, batch=True,
                                 cached_prompt_tokens=fields.get("cached_prompt_tokens")) if n_in is not None else None
                reply = {**fields, "latency_s": latency, "cost_usd": cost, "batch_id": batch_id}
                self.cache.put(key, reply)
                self._batched[key] = reply
                spent += cost or 0.0
        finally:
            self.batch_status = ""
            if reserved is not None:
                self.budget.settle(role, reserved, spent)

    async def run(self, req: Request[T]) -> CallResult[T]:
        """``complete`` for a prepared ``Request``."""
        return await self._complete(req.role, req.messages, req.schema, req.sample_index, req.tag, req.parse,
                                    req.ends, req.attempts, req.sampling)

    def _workers_for(self, roles: Iterable[str]) -> int:
        """Enough callers to fill every endpoint the requests go to: the sum of their ``max_concurrency``.

        The endpoint's bounds are what limits requests in flight; a smaller fixed number here would be a
        hidden cap below them (it was 64, whatever the models file said).
        """
        bounds: dict[str, int] = {}
        for role in set(roles):
            try:
                spec = self.config.for_role(role)
            except Exception:  # an unknown role fails in its own call, with its own message
                continue
            bounds[spec.endpoint()] = max(bounds.get(spec.endpoint(), 0), spec.max_concurrency)
        return max(1, sum(bounds.values()))

    async def run_all(
        self,
        requests: Sequence[Request[T]],
        *,
        limit: int | None = None,
        on_done: Callable[[int, int], Any] | None = None,
        roles: Iterable[str] | None = None,
    ) -> list[CallResult[T]]:
        """Run many calls concurrently, results in request order.

        At most ``limit`` callers at once (default: enough to fill every endpoint's ``max_concurrency``); each
        takes the next request when its last one ends, so a stage of 100,000 calls holds that many callers in
        memory, not 100,000 waiting coroutines. ``requests`` may make each request as it is read (a lazy
        sequence): only those in flight are then held, and ``roles`` names the roles they call (otherwise
        every request is read once to find them).
        """
        if self.batchable and self.context.plan is None and any(
                self._batches(self.config.for_role(r)) for r in set(roles or (q.role for q in requests))):
            await self._send_batches(requests)
        results: list[CallResult[T] | None] = [None] * len(requests)
        todo = iter(enumerate(requests))
        done = 0

        async def caller() -> None:
            nonlocal done
            for i, req in todo:  # one iterator shared by every caller: each request is taken once
                results[i] = await self.run(req)
                done += 1
                if on_done is not None:
                    maybe = on_done(done, len(requests))
                    if asyncio.iscoroutine(maybe):
                        await maybe

        if limit is None:
            limit = self._workers_for(roles if roles is not None else (r.role for r in requests))
        workers = min(len(requests), limit)
        await asyncio.gather(*(caller() for _ in range(workers)))
        return [r for r in results if r is not None]
