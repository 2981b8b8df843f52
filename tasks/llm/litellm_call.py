"""The litellm side of one call: tuning, request arguments, and what we keep of a reply.

Shared by the gateway (calls sent from its own process) and by the worker
processes of ``process_pool`` (calls sent from a child), so both send exactly
the same request and read replies the same way.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import aiohttp
import litellm

from rpbench.tasks.llm.call_errors import MissingKeyError
from rpbench.tasks.llm.config import ModelSpec
from rpbench.tasks.llm.local.models import PROVIDER as LOCAL_PROVIDER

Message = dict[str, Any]


def tune_litellm() -> None:
    """Turn off litellm's per-call logging and cost bookkeeping, which we do not use.

    With no callbacks configured, litellm still builds a logging payload and
    prices every response twice (about half its per-call CPU here); under load
    that CPU, not the network, caps throughput. rpbench keeps its own accounting
    (``ledger``) and prices calls itself (``gateway.call_cost``), so those steps
    are switched off on litellm's logging object. Set RPBENCH_LITELLM_LOGGING=1
    to keep litellm's logging (for example to use litellm callbacks).
    """
    litellm.suppress_debug_info = True
    litellm.telemetry = False
    litellm.set_verbose = False
    # litellm loads its tokenizer on the first call of a route that takes one (hosted_vllm's does), under an
    # import lock, on the few threads it prepares requests on: the whole first wave of a burst queued behind
    # it. Loaded here, once per process; should it fail, the first call that needs it says why.
    with contextlib.suppress(Exception):
        _ = litellm.encoding
    if os.environ.get("RPBENCH_LITELLM_LOGGING") == "1":
        return
    from litellm.litellm_core_utils.litellm_logging import Logging

    async def _no_async_success(self: Any, *args: Any, **kwargs: Any) -> None:
        return None

    Logging.response_cost_calculator = lambda self, *args, **kwargs: None  # type: ignore[method-assign]
    Logging.async_success_handler = _no_async_success  # type: ignore[method-assign]
    Logging.handle_sync_success_callbacks_for_async_calls = lambda self, *a, **k: None  # type: ignore[method-assign]
    # Nor schedule the (now empty) success log at all: litellm queues it on one process-wide worker bound to
    # one event loop, and stage tasks run on several loops at once, which that worker cannot follow.
    litellm.utils._schedule_async_success_logging = lambda *args, **kwargs: None


def request_kwargs(spec: ModelSpec, messages: list[Message], response_format: dict | None) -> dict[str, Any]:
    """Arguments for ``litellm.acompletion``, without key or HTTP session (see ``add_transport``).

    Everything in here is plain JSON, so it can cross a pipe to a worker process.
    """
    kwargs: dict[str, Any] = {
        "model": spec.model,
        "messages": messages,
        "timeout": spec.timeout,
        "num_retries": 0,  # the gateway is the one retry layer
        "drop_params": True,
        **spec.sampling(),
    }
    if spec.api_base:
        kwargs["api_base"] = spec.api_base
    if response_format is not None:
        kwargs["response_format"] = response_format
    return kwargs


def add_transport(kwargs: dict[str, Any], api_key_env: str | None, session: aiohttp.ClientSession) -> dict[str, Any]:
    """The request plus its key (read from the environment now) and the pooled HTTP session."""
    out = dict(kwargs)
    if api_key_env:
        key = os.environ.get(api_key_env)
        if key is None:
            # Said plainly rather than left to the provider's "missing credentials": the usual cause is a
            # process started elsewhere (a Prefect worker, a Dask worker) without the variable.
            raise MissingKeyError(f"{api_key_env} is not set in this process (the models file names it as "
                                  f"the key's variable; export it where the flow runs)")
        out["api_key"] = key
    model = str(out["model"])
    if model.startswith("aiohttp_openai/"):
        # This route takes its aiohttp session as `client`; left to itself it keeps one session
        # for the whole process, bound to the first event loop that used it.
        out["client"] = session
    elif not model.startswith(LOCAL_PROVIDER + "/"):
        out["shared_session"] = session
    return out


def new_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300))


def reply_fields(response: Any) -> dict[str, Any]:
    """The parts of a litellm response the gateway keeps: text, finish reason, token counts."""
    choice = response.choices[0]
    usage = getattr(response, "usage", None)
    n_in, n_out = getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
    if not n_in and not n_out:
        # Some routes (litellm's aiohttp_openai) return no usage: unknown, not zero.
        n_in = n_out = None
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    written = (getattr(details, "cache_write_tokens", None) if details is not None else None) or \
        getattr(usage, "cache_creation_input_tokens", None)
    return {
        "text": choice.message.content or "",
        "finish_reason": choice.finish_reason,
        "prompt_tokens": n_in,
        "completion_tokens": n_out,
        # OpenAI's (and, through litellm, Anthropic's) count of prompt tokens read from the provider's cache.
        "cached_prompt_tokens": int(cached) if cached else None,
        # Anthropic's count of prompt tokens written to its cache (billed above the input price).
        "cache_write_tokens": int(written) if written else None,
    }


async def warm_up() -> None:
    """One call answered by litellm itself (``mock_response``: nothing is sent), made as a worker starts.

    litellm sets much of itself up on its first call (provider tables, transformation classes, its logging
    object). Paid by the first real call, it delays the whole first wave of a run sent to this worker; paid
    here, it overlaps the command's own start. (Its tokenizer, which this route does not load, ``tune_litellm``
    loads.)
    """
    await litellm.acompletion(model="openai/warm-up", messages=[{"role": "user", "content": "warm-up"}],
                              mock_response="ready", num_retries=0)


async def send(kwargs: dict[str, Any]) -> dict[str, Any]:
    """One ``litellm.acompletion`` call (no retries here), reduced to ``reply_fields``."""
    return reply_fields(await litellm.acompletion(**kwargs))
