"""Run a coroutine on uvloop when it is installed: litellm's per-call overhead is mostly event-loop work."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


def run_coroutine(coro: Coroutine[Any, Any, Any]) -> Any:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
