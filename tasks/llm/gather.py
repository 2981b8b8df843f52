"""Many multi-call jobs (dialogues, conversations) side by side, with a progress count as each one ends."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
OnDone = Callable[[int, int], Any] | None


async def gather_counted(jobs: Sequence[Awaitable[T]], on_done: OnDone = None) -> list[T]:
    """Await every job concurrently (the gateway bounds their calls); results in job order; ``on_done(done,
    total)`` after each job finishes, whatever the order they finish in."""
    done = 0

    async def one(job: Awaitable[T]) -> T:
        nonlocal done
        made = await job
        done += 1
        if on_done is not None:
            on_done(done, len(jobs))
        return made

    return list(await asyncio.gather(*(one(j) for j in jobs)))
