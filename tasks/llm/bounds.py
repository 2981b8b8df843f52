"""Per-endpoint bounds that hold across threads and event loops: requests in flight, and requests a minute.

Stages mapped over shards run as separate Prefect tasks, each on its own event
loop in a worker thread. asyncio's own semaphores belong to one loop, so a
bound kept with them would hold per stage, and four shards at once would send
four times ``max_concurrency``. These bounds are shared by every loop of the
process: the endpoint sees what its spec allows, however the work is spread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

# Limits held together with other processes (other flow runs, other workers): given an endpoint and its bounds,
# a context manager that holds a slot of them on a server all those processes share. The Prefect layer
# installs one (Prefect global concurrency limits) when a Prefect server is configured.
SharedLimit = Callable[[str, int, "int | None"], contextlib.AbstractAsyncContextManager[None]]
_shared: SharedLimit | None = None


def share_limits(limit: SharedLimit | None) -> None:
    """Hold every endpoint's bounds with ``limit`` too (None: this process's own bounds only)."""
    global _shared
    _shared = limit


class Slots:
    """At most ``n`` holders at once, whichever thread or event loop they run on."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"a bound of {n} requests in flight would never let one through")
        self._free = n
        self._lock = threading.Lock()
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
        try:
            await future
        except asyncio.CancelledError:
            with self._lock:
                try:
                    self._waiters.remove((loop, future))
                    handed_over = False
                except ValueError:
                    handed_over = True
            # Handed over but already resolved: the slot is ours and must go back. Handed over and still
            # pending: _grant will find the future cancelled and pass the slot on itself.
            if handed_over and future.done() and not future.cancelled():
                self.release()
            raise

    def release(self) -> None:
        with self._lock:
            while self._waiters:
                loop, future = self._waiters.popleft()
                if not loop.is_closed():
                    loop.call_soon_threadsafe(self._grant, future)
                    return
            self._free += 1

    def _grant(self, future: asyncio.Future[None]) -> None:
        if future.cancelled():  # its waiter gave up meanwhile: pass the slot on
            self.release()
        else:
            future.set_result(None)


class Rate:
    """At most ``per_minute`` requests a minute, in bursts of up to that many (a leaky bucket), across loops."""

    def __init__(self, per_minute: int) -> None:
        if per_minute < 1:
            raise ValueError(f"a rate of {per_minute} requests a minute would never let one through")
        self.capacity = float(per_minute)
        self.per_second = per_minute / 60.0
        self._level = 0.0
        self._last = time.monotonic()
        self._lock = threading.Lock()

    async def acquire(self) -> None:
        with self._lock:
            now = time.monotonic()
            self._level = max(0.0, self._level - (now - self._last) * self.per_second)
            self._last = now
            wait = max(0.0, (self._level + 1.0 - self.capacity) / self.per_second)
            self._level += 1.0  # reserved now, so later callers queue behind this one
        if wait > 0:
            await asyncio.sleep(wait)


class Bounds:
    """An endpoint's bounds: a slot for the request's whole life, a rate token before it starts."""

    def __init__(self, max_concurrency: int, rpm: int | None, endpoint: str = "") -> None:
        self.endpoint, self.max_concurrency, self.rpm = endpoint, max_concurrency, rpm
        self.slots = Slots(max_concurrency)
        self.rate = Rate(rpm) if rpm else None

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """This process's bounds, then (when installed) the ones shared with other processes: a request
        waits on the shared server only once its own process could send it."""
        async with self:
            if _shared is None or not self.endpoint:
                yield
            else:
                async with _shared(self.endpoint, self.max_concurrency, self.rpm):
                    yield

    async def __aenter__(self) -> None:
        await self.slots.acquire()
        if self.rate is not None:
            try:
                await self.rate.acquire()
            except BaseException:
                self.slots.release()
                raise

    async def __aexit__(self, *exc: Any) -> None:
        self.slots.release()


_registry: dict[tuple[str, int, int | None], Bounds] = {}
_registry_lock = threading.Lock()


def bounds_for(endpoint: str, max_concurrency: int, rpm: int | None) -> Bounds:
    """The process-wide bounds of an endpoint (one object per endpoint and limits, shared by every gateway)."""
    key = (endpoint, max_concurrency, rpm)
    with _registry_lock:
        if key not in _registry:
            _registry[key] = Bounds(max_concurrency, rpm, endpoint)
        return _registry[key]
