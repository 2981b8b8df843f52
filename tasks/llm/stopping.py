"""Stopping a run on request (Ctrl-C, SIGTERM): no new request leaves, the requests already on the wire come
back and are recorded (call cache and journal), and only then do the calls held back end their stages.

Held calls wait rather than fail at once. A stage whose first held call raised would close its event loop and
cancel the requests still on the wire, losing replies the provider has already answered (and billed), which a
rerun would then send again. They end with ``RunStopped``, a ``KeyboardInterrupt``: never a failed call, so no
stage records it as an item's failure or is cached with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator

_stopping = threading.Event()  # no new request may leave
_released = threading.Event()  # the wait for requests on the wire is over: held calls end now
_lock = threading.Lock()
_on_wire = 0  # requests sent and not yet answered, in this process


class RunStopped(KeyboardInterrupt):
    """A call held back because the run was stopped; it was never sent."""


def stop_sending() -> None:
    """From now on no request leaves this process; calls that would send wait for ``release_held``."""
    _stopping.set()


def release_held() -> None:
    """End every held call (and any later one) with ``RunStopped``."""
    _released.set()


async def gate() -> None:
    """Return at once while the run goes on; once it is stopping, wait until held calls are released, then
    raise ``RunStopped``."""
    if not _stopping.is_set():
        return
    while not _released.is_set():
        await asyncio.sleep(0.05)
    raise RunStopped("the run was stopped before this request was sent")


@contextlib.contextmanager
def on_the_wire() -> Iterator[None]:
    """Count a request as sent and unanswered for as long as the block runs."""
    global _on_wire
    with _lock:
        _on_wire += 1
    try:
        yield
    finally:
        with _lock:
            _on_wire -= 1


def requests_on_the_wire() -> int:
    return _on_wire


def wait_for_the_wire(timeout_s: float) -> int:
    """Wait until no request is on the wire, at most ``timeout_s``; returns how many still are."""
    deadline = time.monotonic() + timeout_s
    while _on_wire and time.monotonic() < deadline:
        time.sleep(0.05)
    return _on_wire
