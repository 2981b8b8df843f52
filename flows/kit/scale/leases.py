"""Slots of a Prefect global concurrency limit, leased in blocks and handed out in this process.

Taking one slot of the server's limit for every request costs two API calls per request (take, give back):
measured, that held calls to 39/s where 145/s went out without it. A ``Leaser`` instead leases a block of
slots at once (``increment-with-lease``), hands them to this process's requests one by one, and gives a
block back once no request has waited for a while, or, when busy, after ``ROTATE_S`` (so that another process
waiting on the limit gets its turn). The server still counts every slot a process holds, so
processes sharing a limit never exceed it together; a process that dies holding a lease loses it when the
lease runs out (``LEASE_S``), as long as it is renewed while the process lives.

Rate limits (requests a minute) work the same way with tokens: a block of them is taken from the server's
rate limit (whose slots decay at rpm/60 a second) and spent locally, one a request; a token taken and not
spent is lost, which only ever makes the process send less than its rate.

Every leaser lives on the process's background event loop (``tasks/llm/event_loop.py``); requests on any
thread and event loop take and give slots through it when they must wait. While slots are free here and nobody
waits, a request takes one and gives it back in its own thread, under a lock, without waking that loop: handing
each request to the loop and back (three cross-thread wake-ups a request) took a fifth of a busy process's CPU.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from rpbench.tasks.llm.event_loop import background_loop

LEASE_S = 60.0  # a lease not renewed for this long is freed by the server
RENEW_S = 15.0
IDLE_S = 1.0  # slots idle this long go back to the server
# A lease held this long while busy is given back and asked for again, so that another process waiting on the
# same limit gets its turn rather than waiting for this one's stream of calls to end.
ROTATE_S = 30.0
# How long a lease request waits before asking again when the limit is full. Prefect's own client waits what
# the server's Retry-After says, which grows with how long slots stay taken (up to 30 s): leased blocks are
# held for seconds, so a second process would wait half a minute for slots freed within one.
POLL_S = 0.5


def block_size(limit: int) -> int:
    """Slots leased at once: an eighth of the limit (so eight processes can each hold a block), at least 1."""
    return max(1, math.ceil(limit / 8))


@dataclass
class LeaseStats:
    """What a leaser did: server calls against the requests they served (the point of leasing)."""

    leases: int = 0
    released: int = 0
    renewals: int = 0
    token_batches: int = 0
    taken: int = 0


_exit_handler = False
_exit_lock = threading.Lock()


def _service_loop() -> asyncio.AbstractEventLoop:
    """The loop every leaser of the process runs on: the process's background loop (``event_loop``), which
    outlives every stage's own; the leases are given back when the process exits."""
    global _exit_handler
    with _exit_lock:
        if not _exit_handler:
            atexit.register(_give_everything_back)
            _exit_handler = True
    return background_loop()


@dataclass
class _Pool:
    """Slots (or tokens) this process holds, and the requests waiting for one; state of the service loop."""

    block: int
    free: int = 0
    waiters: deque[asyncio.Future[None]] = field(default_factory=deque)
    filling: bool = False

    def grant(self) -> None:
        """Free slots to waiting requests, oldest first (the caller holds the leaser's lock)."""
        while self.free > 0 and self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                self.free -= 1


class Leaser:
    """One endpoint's shared limit (and rate) as this process sees it: take a slot, give it back."""

    def __init__(self, name: str, limit: int, rate_name: str | None = None, rpm: int | None = None,
                 lease: Callable[..., Awaitable[Any]] | None = None,
                 release: Callable[[UUID], Awaitable[Any]] | None = None,
                 renew: Callable[[UUID, float], Awaitable[Any]] | None = None,
                 tokens: Callable[[str, int], Awaitable[Any]] | None = None) -> None:
        self.name, self.limit, self.rate_name, self.rpm = name, limit, rate_name, rpm
        self.stats = LeaseStats()
        self._slots = _Pool(block_size(limit))
        self._tokens = _Pool(block_size(rpm)) if rpm else None
        self._leases: list[tuple[UUID, int, float]] = []  # (lease, slots, when leased)
        self._held = 0
        self._retiring: list[Any] | None = None  # [lease, slots still in use]: given back as they come back
        self._idle: asyncio.TimerHandle | None = None
        # Guards the slots' count, their waiters and the retiring lease: taken and given from any thread.
        self._mutex = threading.Lock()
        self._last_used = time.monotonic()  # the last take or give (idle leases go back IDLE_S after it)
        self._idle_pending = False  # an idle check is on its way to the service loop
        self._renewing: asyncio.Task[None] | None = None
        self._lease, self._release = lease or _lease, release or _release
        self._renew, self._take_tokens = renew or _renew, tokens or _take_tokens
        self.loop = _service_loop()

    # -- from any thread and event loop ------------------------------------------------------------
    async def take(self) -> None:
        """Wait for a slot (after a token of the rate, when there is one)."""
        if self._tokens is None and self._take_free():
            return
        done = asyncio.run_coroutine_threadsafe(self._take(), self.loop)
        try:
            await asyncio.wrap_future(done)
        except asyncio.CancelledError:
            # Granted as the caller gave up (now or later): the slot goes back.
            done.add_done_callback(lambda f: self.give() if not f.cancelled() and f.exception() is None else None)
            raise

    def _take_free(self) -> bool:
        """A free slot at once, in the caller's thread, when there is one and nobody waits before us."""
        with self._mutex:
            if self._slots.free <= 0 or self._slots.waiters:
                return False
            self._slots.free -= 1
            self.stats.taken += 1
            self._last_used = time.monotonic()
            return True

    def give(self) -> None:
        with self._mutex:
            at_once = self._retiring is None and not self._slots.waiters
            if at_once:
                self._slots.free += 1
                self._last_used = time.monotonic()
                if self._idle is not None or self._idle_pending:
                    return  # an idle check is armed already: it looks at ``_last_used`` when it fires
                self._idle_pending = True
        self.loop.call_soon_threadsafe(self._armed if at_once else self._give)

    def _armed(self) -> None:
        with self._mutex:
            self._idle_pending = False
        self._schedule_idle()

    # -- on the service loop -----------------------------------------------------------------------
    async def _take(self) -> None:
        if self._tokens is not None:
            await self._wait(self._tokens, self._fill_tokens)
        await self._wait(self._slots, self._fill_slots)
        with self._mutex:  # an armed idle check sees this take in ``_last_used``: it need not be cancelled
            self.stats.taken += 1
            self._last_used = time.monotonic()

    async def _wait(self, pool: _Pool, fill: Callable[[], Awaitable[bool]]) -> None:
        with self._mutex:
            if pool.free > 0 and not pool.waiters:
                pool.free -= 1
                return
            waiter = self.loop.create_future()
            pool.waiters.append(waiter)
            start_filling, pool.filling = not pool.filling, True
        if start_filling:
            self.loop.create_task(self._filling(pool, fill))
        try:
            await waiter
        except asyncio.CancelledError:
            with self._mutex:
                if waiter.done() and not waiter.cancelled():
                    pool.free += 1  # granted as its taker gave up
                    pool.grant()
                else:
                    with contextlib.suppress(ValueError):
                        pool.waiters.remove(waiter)
            raise

    async def _filling(self, pool: _Pool, fill: Callable[[], Awaitable[bool]]) -> None:
        try:
            while pool.waiters:
                # As many blocks as the waiting requests need, asked for side by side: a stage starting with
                # 64 requests waiting on blocks of 8 waits one answer of the server, not eight in a row (which,
                # with the server busy starting the run's tasks, took seconds). Tokens come one block at a time:
                # a token taken and not spent is lost.
                at_once = math.ceil(len(pool.waiters) / pool.block) if pool is self._slots else 1
                filled = await asyncio.gather(*(self._fill_and_grant(pool, fill) for _ in range(max(1, at_once))))
                if not any(filled):
                    break  # nothing more to lease: waiters get slots as they come back (``_give``)
        except Exception as exc:  # the server refused or is gone: every waiter hears it
            with self._mutex:
                while pool.waiters:
                    waiter = pool.waiters.popleft()
                    if not waiter.done():
                        waiter.set_exception(exc)
        finally:
            with self._mutex:
                pool.filling = False
            if pool is self._slots:  # a block that came after its waiters were served goes back once idle
                self._schedule_idle()

    async def _fill_and_grant(self, pool: _Pool, fill: Callable[[], Awaitable[bool]]) -> bool:
        if not await fill():
            return False
        with self._mutex:
            pool.grant()
        return True

    async def _fill_slots(self) -> bool:
        # A whole block, however few wait now: more are on their way (a stage's calls come in a stream), and
        # slots nobody takes go back once idle. Counted as held before asking, so blocks asked for side by side
        # never add up to more than the limit.
        with self._mutex:
            wanted = min(self._slots.block, self.limit - self._held)
            if wanted <= 0:  # every slot of the limit is leased (or being leased) here already
                return False
            self._held += wanted
        try:
            lease_id = await self._lease(self.name, wanted)
        except BaseException:
            with self._mutex:
                self._held -= wanted
            raise
        self.stats.leases += 1
        self._leases.append((lease_id, wanted, self.loop.time()))
        with self._mutex:
            self._slots.free += wanted
        if self._renewing is None or self._renewing.done():
            self._renewing = self.loop.create_task(self._keep_renewing())
        return True

    async def _fill_tokens(self) -> bool:
        assert self._tokens is not None and self.rate_name is not None
        wanted = self._tokens.block
        await self._take_tokens(self.rate_name, wanted)
        self.stats.token_batches += 1
        with self._mutex:
            self._tokens.free += wanted
        return True

    def _give(self) -> None:
        with self._mutex:
            self._last_used = time.monotonic()
            if self._retiring is not None:  # this slot belongs to a lease on its way back to the server
                self._retiring[1] -= 1
                if self._retiring[1] == 0:
                    self.loop.create_task(self._give_back(self._retiring[0]))
                    self._retiring = None
                return
            self._slots.free += 1
            self._slots.grant()
        self._schedule_idle()

    def _schedule_idle(self) -> None:
        with self._mutex:
            if self._leases and not self._slots.waiters and self._idle is None:
                self._idle = self.loop.call_later(IDLE_S, self._return_idle)

    def _return_idle(self) -> None:
        """Give back the leases no request needs: every slot of them free, nobody waiting, none taken or given
        for ``IDLE_S``."""
        with self._mutex:
            self._idle = None
            quiet_for = time.monotonic() - self._last_used
            if quiet_for < IDLE_S:  # slots were taken or given since this check was armed: look again later
                self._idle = self.loop.call_later(IDLE_S - quiet_for, self._return_idle)
                return
            while self._leases and not self._slots.waiters:
                lease = min(self._leases, key=lambda held: held[1])
                lease_id, size, _ = lease
                if self._slots.free < size:
                    break
                self._leases.remove(lease)
                self._held -= size
                self._slots.free -= size
                self.stats.released += 1
                self.loop.create_task(self._give_back(lease_id))

    async def _give_back(self, lease_id: UUID) -> None:
        with contextlib.suppress(Exception):  # a lease the server lost is free already (it expires)
            await self._release(lease_id)

    def _rotate(self) -> None:
        """Start giving back the oldest lease when it is older than ``ROTATE_S`` and calls are waiting: its free
        slots at once, the others as their calls end; waiting calls then lease anew, behind other processes."""
        with self._mutex:
            if self._retiring is not None or not self._leases or not self._slots.waiters:
                return
            lease_id, size, since = self._leases[0]
            if self.loop.time() - since < ROTATE_S:
                return
            self._leases.pop(0)
            self._held -= size
            now_free = min(self._slots.free, size)
            self._slots.free -= now_free
            self.stats.released += 1
            if now_free == size:
                self.loop.create_task(self._give_back(lease_id))
            else:
                self._retiring = [lease_id, size - now_free]
            start_filling, self._slots.filling = not self._slots.filling, True
        if start_filling:
            self.loop.create_task(self._filling(self._slots, self._fill_slots))

    async def _give_all_back(self) -> None:
        """Every lease back to the server now (the process is ending): another process waiting on the limit
        gets the slots at once, rather than when the leases run out."""
        with self._mutex:
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None
            held = [lease_id for lease_id, _, _ in self._leases]
            held += [self._retiring[0]] if self._retiring is not None else []
            self._leases, self._retiring, self._held, self._slots.free = [], None, 0, 0
        self.stats.released += len(held)
        await asyncio.gather(*(self._give_back(lease_id) for lease_id in held))

    async def _keep_renewing(self) -> None:
        while self._leases or self._retiring is not None:
            await asyncio.sleep(min(RENEW_S, ROTATE_S))
            held = [lease_id for lease_id, _, _ in self._leases]
            held += [self._retiring[0]] if self._retiring is not None else []
            for lease_id in held:
                with contextlib.suppress(Exception):  # a lease given back meanwhile
                    await self._renew(lease_id, LEASE_S)
                    self.stats.renewals += 1
            self._rotate()


# -- Prefect's API ---------------------------------------------------------------------------------
_clients: dict[tuple[int, str], Any] = {}


async def _client() -> Any:
    """One Prefect client per server for the service loop, kept open: making one per lease, renewal or
    release built a new TLS context each time, which took 6% of a busy process's CPU."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    key = (id(asyncio.get_running_loop()), str(PREFECT_API_URL.value()))
    client = _clients.get(key)
    if client is None:
        client = get_client()
        await client.__aenter__()
        _clients[key] = client
    return client


async def _lease(name: str, slots: int) -> UUID:
    """A lease on ``slots`` slots of the limit ``name``, waiting (and asking again) while it is full.

    The client is called directly, not through Prefect's acquisition service: that service logs every "limit
    full" answer as an error with a traceback when it is not left to wait by itself, and it waits what the
    server's Retry-After says (see ``POLL_S``)."""
    import httpx
    from prefect.client.schemas.responses import ConcurrencyLimitWithLeaseResponse

    client = await _client()
    while True:
        try:
            response = await client.increment_concurrency_slots_with_lease(
                names=[name], slots=slots, mode="concurrency", lease_duration=LEASE_S)
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 423:
                raise
            # The limit is full now: ask again soon, sooner if the server says so.
            await asyncio.sleep(min(float(exc.response.headers.get("Retry-After", POLL_S)), POLL_S))
            continue
        granted = ConcurrencyLimitWithLeaseResponse.model_validate(response.json())
        if not granted.limits:
            raise RuntimeError(f"the Prefect server has no concurrency limit named {name!r}")
        return granted.lease_id


async def _release(lease_id: UUID) -> None:
    await (await _client()).release_concurrency_slots_with_lease(lease_id)


async def _renew(lease_id: UUID, duration: float) -> None:
    await (await _client()).renew_concurrency_lease(lease_id, duration)


async def _take_tokens(name: str, tokens: int) -> None:
    from prefect.concurrency._asyncio import aacquire_concurrency_slots

    await aacquire_concurrency_slots([name], tokens, mode="rate_limit", strict=True)


_leasers: dict[tuple[str, ...], Leaser] = {}
_leasers_lock = threading.Lock()


def leaser_for(server: str, name: str, limit: int, rate_name: str | None, rpm: int | None) -> Leaser:
    """The process's leaser of a limit on a server (one, shared by every thread and event loop)."""
    key = (server, name, str(limit), str(rate_name), str(rpm))
    with _leasers_lock:
        if key not in _leasers:
            _leasers[key] = Leaser(name, limit, rate_name, rpm)
        return _leasers[key]


def _give_everything_back(timeout_s: float = 10.0) -> None:
    """At exit: every leaser's leases back to the server (the service loop still runs: it is a daemon
    thread, stopped only after exit handlers)."""
    with _leasers_lock:
        leasers = list(_leasers.values())
    loop = leasers[0].loop if leasers else None
    if loop is None or loop.is_closed():
        return

    async def all_back() -> None:
        await asyncio.gather(*(leaser._give_all_back() for leaser in leasers), return_exceptions=True)

    with contextlib.suppress(Exception):  # a server already gone: the leases run out on their own
        asyncio.run_coroutine_threadsafe(all_back(), loop).result(timeout_s)


def all_stats() -> dict[str, LeaseStats]:
    with _leasers_lock:
        return {k[1]: v.stats for k, v in _leasers.items()}


__all__ = ["LEASE_S", "LeaseStats", "Leaser", "all_stats", "block_size", "leaser_for"]
