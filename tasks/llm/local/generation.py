"""What a local engine is handed and gives back (a request, a result, its running totals, the engine's face),
apart from the engines themselves, which all use it.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class GenRequest:
    messages: list[dict[str, Any]]
    max_tokens: int
    temperature: float
    top_p: float | None
    seed: int | None
    schema: dict[str, Any] | None
    repetition_penalty: float = 1.0
    future: Future = field(default_factory=Future)


@dataclass
class GenResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    cached_tokens: int = 0  # prompt tokens read from a cached prefix instead of computed


class EngineMeter:
    """Running totals of one engine: requests in flight, tokens made, and a recent tokens/s."""

    WINDOW_S = 30.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.in_flight = 0
        self.requests_done = 0
        self.completion_tokens = 0
        self.prompt_tokens = 0
        self.cached_tokens = 0
        self._recent: list[tuple[float, int]] = []

    def track(self, future: Future) -> Future:
        """Count ``future`` as in flight until it ends; a result adds its tokens, a failure adds nothing."""
        with self._lock:
            self.in_flight += 1
        future.add_done_callback(lambda f: self.finished(None if f.exception() else f.result()))
        return future

    def finished(self, result: GenResult | None) -> None:
        now = time.monotonic()
        with self._lock:
            self.in_flight -= 1
            if result is None:
                return
            self.requests_done += 1
            self.completion_tokens += result.completion_tokens
            self.prompt_tokens += result.prompt_tokens
            self.cached_tokens += result.cached_tokens
            self._recent.append((now, result.completion_tokens))
            self._recent = [(t, n) for t, n in self._recent if now - t <= self.WINDOW_S]

    def tokens_per_s(self) -> float:
        """Reply tokens per second over the last WINDOW_S seconds (0 before anything finished)."""
        now = time.monotonic()
        with self._lock:
            recent = [(t, n) for t, n in self._recent if now - t <= self.WINDOW_S]
        if len(recent) < 2:
            return 0.0
        span = max(now - recent[0][0], 1e-6)
        return sum(n for _, n in recent[1:]) / span


class Engine(Protocol):
    name: str
    meter: EngineMeter

    def submit(self, request: GenRequest) -> Future: ...
