"""The event loops rpbench runs: a command's own (``run_coroutine``, on uvloop when it is installed: litellm's
per-call overhead is mostly event-loop work) and the process's one background loop (``background_loop``), on a
thread of its own, which every service that must outlive a stage's loop shares: the files and batches API
calls and the Prefect server's leases."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any


def run_coroutine(coro: Coroutine[Any, Any, Any]) -> Any:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


_loop: tuple[int, asyncio.AbstractEventLoop] | None = None
_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """The process's background event loop, started on first use (again in a forked child: a loop's thread does
    not survive a fork). A client made on it keeps its connections on it, whichever stage's loop asks."""
    global _loop
    with _lock:
        if _loop is None or _loop[0] != os.getpid() or _loop[1].is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="rpbench-background", daemon=True).start()
            _loop = (os.getpid(), loop)
        return _loop[1]


def on_background(coro: Coroutine[Any, Any, Any]) -> Any:
    """Await ``coro`` run on the background loop, from any other loop."""
    return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, background_loop()))
