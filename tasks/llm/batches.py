"""A stage's independent calls sent as one batch through litellm's files and batches API.

OpenAI, Azure, Vertex, Bedrock, Anthropic and others sell calls made this way at about half the interactive
price, answered within a window (24 h) instead of seconds. The gateway (``Gateway.run_all``) sends here the calls
of roles with ``batch = true`` that are not in the call cache, one batch per stage shard and model; the replies
go into the call cache, so the stage then reads them as it reads any cached reply (an unusable one is asked
again as usual, interactively).

Nothing is submitted twice. What a batch asks (its model and the cache keys of its requests) names it; the call
cache journals the uploaded file, that the batch is being created, and then its id. A run killed while the batch
is in flight, started again, polls the same batch. Killed between asking for the batch and journaling its id, it
finds the batch again among the provider's batches by the name it carries in its metadata; a creation whose
reply is lost (the batch made, the answer a timeout or a 5xx) is looked for the same way before it is tried again,
and when another batch carrying the same name is found once ours is made, the older is used and the other
cancelled (on the providers whose batches litellm can list: OpenAI, Azure, Vertex AI and vLLM; on the others a
creation's lost reply fails the stage, and the same command run again creates the batch anew). Every call to
the provider's files and batches API runs on one event loop of this module's own, with the client's retries off
(see ``_api``).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from rpbench.tasks.llm.cache import CallCache
from rpbench.tasks.llm.config import ModelSpec, RetryPolicy
from rpbench.tasks.llm.event_loop import on_background
from rpbench.tasks.llm.provider_schema import BATCH_PROVIDERS, LISTED_BATCH_PROVIDERS, batch_provider

ENDPOINT = "/v1/chat/completions"
# The window rpbench asks a provider to answer a batch in.
WINDOW = "24h"
# A batch's claims on its calls are dated this far forward and renewed while its process waits for it (a
# quarter of this apart): a batch answered within hours is never taken as abandoned, and the claims of a
# process that died on another machine sharing the call cache (whose pid cannot be asked) lapse in minutes.
BATCH_CLAIM_S = 600.0
API_TIMEOUT_S = 120.0  # the least time a files or batches call is given (see _credentials)
DONE, GIVEN_UP = "completed", ("failed", "expired", "cancelled", "cancelling")
log = logging.getLogger("rpbench")

Item = tuple[str, list[dict[str, Any]], dict[str, Any] | None, int]  # cache key, messages, response format, sample


def _model_name(model: str) -> str:
    provider, slash, rest = model.partition("/")
    return rest if slash and provider in BATCH_PROVIDERS else model


def _credentials(spec: ModelSpec) -> dict[str, Any]:
    # Each files or batches call bounded in time, as a chat request is (litellm's own default is 600 s: a reply
    # lost on a loaded machine held a batch test for ten minutes before its retry). Not the chat timeout alone:
    # an upload or a download of a large batch file may take longer than one reply.
    out: dict[str, Any] = {"timeout": max(spec.timeout, API_TIMEOUT_S)}
    if spec.api_base:
        out["api_base"] = spec.api_base
    if spec.api_key_env and os.environ.get(spec.api_key_env):
        out["api_key"] = os.environ[spec.api_key_env]
    if "api_version" in spec.extra:
        out["api_version"] = spec.extra["api_version"]
    return out


def _line(spec: ModelSpec, item: Item) -> dict[str, Any]:
    key, messages, response_format, sample_index = item
    body: dict[str, Any] = {"model": _model_name(spec.model), "messages": messages, **spec.sampling()}
    body.pop("api_version", None)
    if sample_index and spec.seed is not None:  # as an interactive call sends it (see Gateway._reply)
        body["seed"] = spec.seed + sample_index
    if response_format is not None:
        body["response_format"] = response_format
    return {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}


def batch_digest(spec: ModelSpec, keys: Sequence[str]) -> str:
    return hashlib.sha256(orjson.dumps({"model": spec.model, "api_base": spec.api_base or "",
                                        "keys": sorted(keys)})).hexdigest()


def _reply_of(line: dict[str, Any]) -> dict[str, Any] | None:
    response = line.get("response") or {}
    body = response.get("body") or {}
    if response.get("status_code") != 200 or not body.get("choices"):
        return None
    choice, usage = body["choices"][0], body.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    return {"text": (choice.get("message") or {}).get("content") or "", "finish_reason": choice.get("finish_reason"),
            "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
            "cached_prompt_tokens": int(cached) if cached else None}


async def _api(name: str, provider: str, credentials: dict[str, Any], **kwargs: Any) -> Any:
    """One call to litellm's files or batches API, once, on the background loop, with the client's own retries off.

    Every call here says ``max_retries=0``, not only the creation: for Azure, litellm's client cache leaves the
    retry count out of its key, so a client first made by an upload or a look-up with the SDK's default retries
    would be reused by the creation."""
    import litellm

    call = getattr(litellm, name)(custom_llm_provider=provider, max_retries=0, **credentials, **kwargs)
    # On the process's one background loop: litellm keeps one client per set of credentials and hands it to
    # whichever loop asks, but the client's connections belong to the loop that made it: a stage on another loop
    # (stage shards run on several at once) got "Server disconnected", and the SDK's silent retry of that
    # creation made a second batch.
    return await on_background(call)


# What each call of litellm's files and batches API asks of the provider, as a message names it.
ENDPOINTS = {"acreate_file": "POST /v1/files (upload)", "acreate_batch": "POST /v1/batches (create)",
             "alist_batches": "GET /v1/batches (list)", "aretrieve_batch": "GET /v1/batches/{id} (status)",
             "afile_content": "GET /v1/files/{id}/content (replies)", "acancel_batch": "POST /v1/batches/{id}/cancel"}


class BatchEndpointFailed(Exception):
    """A call to a provider's files or batches API that failed past its retries (the stage then stops the run)."""

    def __init__(self, provider: str, name: str, error: BaseException) -> None:
        super().__init__(provider, name, error)
        self.provider, self.endpoint, self.error = provider, ENDPOINTS.get(name, name), error


async def _retried(name: str, provider: str, credentials: dict[str, Any], policy: RetryPolicy, **kwargs: Any) -> Any:
    """A call that may be sent twice without a second charge (an upload, a look-up, a cancel), retried when
    transient, as a chat request is; still failing, a ``BatchEndpointFailed`` naming the provider and the
    endpoint."""
    from rpbench.tasks.llm.transient import retrying  # litellm with it: loaded when a batch is sent

    try:
        async for attempt in retrying(policy):
            with attempt:
                result = await _api(name, provider, credentials, **kwargs)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise BatchEndpointFailed(provider, name, exc) from exc
    return result


async def _made_for(provider: str, digest: str, credentials: dict[str, Any], policy: RetryPolicy) -> list[str]:
    """The ids of the live batches (not cancelled, failed or expired) the provider holds for ``digest``, oldest
    first (ties by id, so every process reading the same list puts them in the same order)."""
    found = await _retried("alist_batches", provider, credentials, policy, limit=100)
    batches = [b for b in getattr(found, "data", None) or []
               if (getattr(b, "metadata", None) or {}).get("rpbench_digest") == digest
               and getattr(b, "status", None) not in GIVEN_UP]
    return [str(b.id) for b in sorted(batches, key=lambda b: (getattr(b, "created_at", 0) or 0, str(b.id)))]


async def _find(provider: str, digest: str, credentials: dict[str, Any], policy: RetryPolicy) -> str | None:
    """The id of a batch already created for ``digest`` (its id was never journaled), if the provider has it
    (None where litellm cannot list the provider's batches)."""
    if provider not in LISTED_BATCH_PROVIDERS:
        return None
    made = await _made_for(provider, digest, credentials, policy)
    return made[0] if made else None


async def _one_of_doubles(provider: str, digest: str, ours: str, credentials: dict[str, Any],
                          policy: RetryPolicy) -> str:
    """The one batch to use for ``digest`` when more than ours carries it: the oldest; the others cancelled.

    A second one appears when a retry below litellm (an SDK client it reuses with its own retries, whatever
    this module asks) sends a creation twice, or when two runs sharing a call cache submit the same calls at
    the same moment. Each is billed. Every process keeps the oldest, so two runs agree on the one they poll
    instead of cancelling each other's. Only where litellm can list the provider's batches."""
    if provider not in LISTED_BATCH_PROVIDERS:
        return ours
    try:
        made = await _made_for(provider, digest, credentials, policy)
    except Exception as exc:  # our batch is fine; only the look for doubles failed
        log.warning("could not check for a second batch made for %s (%s)", ours, type(exc).__name__)
        return ours
    if ours not in made:
        # Not listed: either the listing lags behind our creation (it cannot say which is oldest: keep ours), or
        # another run listed first, kept an older batch and cancelled ours (poll the one it kept).
        if made and (await _retried("aretrieve_batch", provider, credentials, policy,
                                    batch_id=ours)).status in GIVEN_UP:
            log.info("batch %s was cancelled as a second one for the same calls: using %s", ours, made[0])
            return made[0]
        return ours
    kept = made[0]
    for double in made[1:]:
        await _retried("acancel_batch", provider, credentials, policy, batch_id=double)
        log.warning("batch %s and %s ask the same calls: cancelled %s, using %s (the older)", kept, double,
                    double, kept)
    return kept


async def _create(provider: str, digest: str, file_id: str, credentials: dict[str, Any], policy: RetryPolicy) -> str:
    """Create the batch for ``digest`` once. A reply lost after the provider made the batch (a timeout, a
    dropped connection, a 5xx from a proxy) must not make a second one, so a failed attempt looks for the batch
    by its digest first; only a transient failure with no batch found is tried again."""

    async def once() -> str:
        try:
            created = await _api("acreate_batch", provider, credentials, completion_window=WINDOW,
                                 endpoint=ENDPOINT, input_file_id=file_id, metadata={"rpbench_digest": digest})
            return str(created.id)
        except Exception as exc:
            found = await _find(provider, digest, credentials, policy)
            if not found:
                raise
            log.info("batch %s was made though its creation failed (%s): using it", found, type(exc).__name__)
            return found

    from rpbench.tasks.llm.transient import retrying

    try:
        if provider not in LISTED_BATCH_PROVIDERS:  # a lost reply cannot be told from a failure: one attempt only
            return await once()
        async for attempt in retrying(policy):
            with attempt:
                batch_id = await once()
    except (BatchEndpointFailed, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise BatchEndpointFailed(provider, "acreate_batch", exc) from exc
    return await _one_of_doubles(provider, digest, batch_id, credentials, policy)


async def send_batch(spec: ModelSpec, items: Sequence[Item], cache: CallCache, label: str,
                     on_poll: Callable[[str], Any] | None = None,
                     policy: RetryPolicy | None = None) -> tuple[str, dict[str, dict[str, Any]]]:
    """Submit ``items`` as one batch (or find the one submitted before) and wait for it; its id, and the reply
    fields of each line answered, by cache key (lines the provider failed are left out: they are sent again
    interactively). ``on_poll`` is told where the batch stands at each look (the stage's progress line);
    ``policy``: the run's retry policy, for every call to the provider."""
    policy = policy or RetryPolicy()
    provider = batch_provider(spec.model)
    if provider is None:
        raise ValueError(f"{spec.model} has no batch API")
    credentials = _credentials(spec)
    digest = batch_digest(spec, [item[0] for item in items])
    state = cache.batch_state(digest) or {}
    if not state.get("batch_id") and state.get("creating"):
        state["batch_id"] = await _find(provider, digest, credentials, policy)
        if state["batch_id"]:
            cache.journal_batch(digest, state)
    if not state.get("batch_id"):
        if not state.get("file_id"):
            data = b"\n".join(orjson.dumps(_line(spec, item)) for item in items)
            uploaded = await _retried("acreate_file", provider, credentials, policy,
                                   file=(f"rpbench-{digest[:12]}.jsonl", data), purpose="batch")
            state = {"file_id": uploaded.id}
            cache.journal_batch(digest, state)
        state["creating"] = True  # from here a kill leaves a batch that may exist: found again by its digest
        cache.journal_batch(digest, state)
        state["batch_id"] = await _create(provider, digest, state["file_id"], credentials, policy)
        cache.journal_batch(digest, state)
        log.info("%s: batch %s submitted (%d requests to %s)", label, state["batch_id"], len(items), spec.model)
    else:
        log.info("%s: batch %s was submitted by an earlier run: polling it", label, state["batch_id"])
    started = time.monotonic()
    while True:
        batch = await _retried("aretrieve_batch", provider, credentials, policy, batch_id=state["batch_id"])
        counts = getattr(batch, "request_counts", None)
        done = getattr(counts, "completed", 0) if counts is not None else 0
        if batch.status == DONE:
            break
        if batch.status in GIVEN_UP:
            log.warning("%s: batch %s ended %s: its requests are sent one by one", label, batch.id, batch.status)
            cache.journal_batch(digest, {**state, "status": batch.status})
            return str(batch.id), {}
        status = f"batch {batch.id} {batch.status}, {done} of {len(items)} answered"
        if on_poll is not None:
            on_poll(status)
        log.info("%s: %s, %.0f s", label, status, time.monotonic() - started)
        await asyncio.sleep(spec.batch_poll_s)
    replies: dict[str, dict[str, Any]] = {}
    if batch.output_file_id:
        content = await _retried("afile_content", provider, credentials, policy, file_id=batch.output_file_id)
        raw = getattr(content, "content", content)
        for text in (raw if isinstance(raw, bytes) else str(raw).encode()).splitlines():
            if text.strip():
                line = orjson.loads(text)
                reply = _reply_of(line)
                if reply is not None:
                    replies[str(line.get("custom_id"))] = reply
    cache.journal_batch(digest, {**state, "status": DONE})
    return str(batch.id), replies
