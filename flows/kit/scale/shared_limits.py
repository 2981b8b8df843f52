"""Per-model limits held together by every flow run and worker: Prefect global concurrency limits.

A gateway bounds its own process (requests in flight, requests a minute). Two flow runs sharing one API key,
or two workers, would each apply the key's limit alone; with a Prefect server configured, every request
also holds a slot of a global concurrency limit named after its endpoint (model and server), which the
server enforces across processes, and, with ``rpm``, a rate limit whose slots decay at rpm/60 a second.
A process leases those slots from the server in blocks and hands them out itself (``leases``), so a
request costs no call to the server; the server still counts every slot each process holds.
The limits are created on first use with the model's ``max_concurrency`` and ``rpm``; change them in the
Prefect UI (Concurrency) or with ``prefect gcl update`` and every run follows.

Only with a real server: the temporary server of a single command is that command's alone, so its
process-wide bounds already hold. Local models (``local/...``) run in the process and are not shared.
``RPBENCH_SHARED_LIMITS=0`` turns it off.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import hashlib
import os
import re
import threading
from collections.abc import AsyncIterator
from typing import Any

from rpbench.tasks.core.secrets import redact_url
from rpbench.tasks.llm.bounds import share_limits
from rpbench.tasks.llm.config import endpoint_parts

OFF = "RPBENCH_SHARED_LIMITS"
_made: set[str] = set()


@functools.lru_cache(maxsize=1024)
def limit_name(endpoint: str) -> str:
    """A readable, stable name for an endpoint's limit (the digest keeps two long names apart). The Prefect UI
    lists it: a password or key written into the server's address is masked in the readable part."""
    model, base = endpoint_parts(endpoint)
    readable = re.sub(r"[^a-z0-9]+", "-", f"{model}@{redact_url(base)}".lower()).strip("-")[:48]
    return f"rpbench-{readable}-{hashlib.sha256(endpoint.encode()).hexdigest()[:8]}"


async def _ensure(name: str, limit: int, decay: float | None = None) -> None:
    """Create the limit if the server has none by that name (an existing one is kept as it is)."""
    from prefect.settings import get_current_settings

    made = f"{get_current_settings().api.url}|{name}"  # per server: another server has its own limits
    if made in _made:
        return
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    async with get_client() as client:
        try:
            await client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            with contextlib.suppress(ObjectAlreadyExists):  # another run made it meanwhile
                await client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(
                    name=name, limit=limit, active=True, slot_decay_per_second=decay or 0.0))
    _made.add(made)


_ready: dict[tuple[str, str, int, int | None], Any] = {}  # (server, endpoint, limits) -> its leaser, limits made
_making: dict[tuple[str, str, int, int | None], concurrent.futures.Future[Any]] = {}
_making_lock = threading.Lock()


async def _leaser(server: str, endpoint: str, max_concurrency: int, rpm: int | None) -> Any:
    """The leaser of an endpoint's limits on ``server``, the limits created there first; looked up once per
    server, endpoint and limits (a request only reads the dictionary).

    Made once: a stage starts with all its requests at once (64, say), and each making it, with a Prefect
    client and API calls of its own, kept a busy server and both cores occupied for seconds before the first
    request went out. The others wait for the one making it, and hear its error if it fails."""
    key = (server, endpoint, max_concurrency, rpm)
    while (leaser := _ready.get(key)) is None:
        with _making_lock:
            pending = _making.get(key)
            mine = pending is None
            if mine:
                pending = _making[key] = concurrent.futures.Future()
        assert pending is not None
        if not mine:
            await asyncio.wrap_future(pending)  # made, or given up (cancelled): look again
            continue
        try:
            from rpbench.flows.kit.scale.leases import leaser_for

            name = limit_name(endpoint)
            await _ensure(name, max_concurrency)
            if rpm:
                await _ensure(f"{name}-rpm", rpm, decay=rpm / 60.0)
            leaser = _ready[key] = leaser_for(server, name, max_concurrency, f"{name}-rpm" if rpm else None, rpm)
        except Exception as exc:
            pending.set_exception(exc)
            raise
        finally:
            with _making_lock:
                del _making[key]
            if not pending.done():
                pending.set_result(None)  # cancelled while making it: the next one to look makes it
    return leaser


@contextlib.asynccontextmanager
async def prefect_limit(endpoint: str, max_concurrency: int, rpm: int | None) -> AsyncIterator[None]:
    """Hold one slot of the endpoint's global limits for the request's life (when, at this moment, a Prefect
    server is configured: the process may have run a flow against one earlier and none now)."""
    server = "" if endpoint.startswith("local/") else _server()
    if not server:
        yield
        return
    leaser = await _leaser(server, endpoint, max_concurrency, rpm)
    await leaser.take()
    try:
        yield
    finally:
        leaser.give()


OWN_SERVER_ENV = "RPBENCH_OWN_PREFECT_SERVER"


def own_server() -> bool:
    """Whether this process's Prefect server is a temporary one of its own, which ends with it: none is
    configured (Prefect's own temporary server), or PREFECT_API_URL names the one a command launched as it
    started (environment.launch_temporary_server), as much the command's own as Prefect's."""
    from prefect.settings import get_current_settings

    url = str(get_current_settings().api.url or "")
    return not url or url == os.environ.get(OWN_SERVER_ENV)


def _server() -> str:
    """The Prefect server shared with other processes (PREFECT_API_URL), or "" for none."""
    from prefect.settings import get_current_settings

    return "" if own_server() else str(get_current_settings().api.url)


def install_shared_limits() -> bool:
    """Share the gateway's limits through the Prefect server whenever one is configured (checked per request);
    returns whether sharing is on."""
    shared = os.environ.get(OFF, "1") != "0"
    share_limits(prefect_limit if shared else None)
    return shared


__all__ = ["install_shared_limits", "limit_name", "own_server", "prefect_limit"]
