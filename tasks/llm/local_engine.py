"""The engines behind ``local/<name>``: what a request and a result are, and which engine serves a name.

A GGUF file runs on llama.cpp (``llamacpp_engine``): continuous batching over
parallel slots, reuse of cached prompt prefixes, the file's own quantization.
A transformers model folder runs on transformers (``transformers_engine``),
which is also what LoRA training and adapters need. Both take the same
request, honour its temperature and seed per row (a row's reply does not
depend on which other rows share the machine's work at that moment, up to the
float rounding of batched kernels), constrain a row to a JSON schema when
asked, and count tokens. Each engine keeps running totals that progress lines
show (tokens/s, requests in flight).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from rpbench.tasks.llm.local_models import local_model, weights_path

log = logging.getLogger("rpbench.local_model")


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


def _cuda_without_llamacpp_gpu() -> bool:
    """A CUDA GPU is here but the installed llama.cpp wheel is the CPU build (PyPI's).

    Then a GGUF runs on transformers, on the GPU, rather than on llama.cpp on the CPU; installing
    xllamacpp's CUDA wheel puts it back on llama.cpp. Decided by the machine, and logged.
    """
    if not os.path.exists("/proc/driver/nvidia/version"):  # no NVIDIA driver: no need to import torch
        return False
    import torch

    if not torch.cuda.is_available():
        return False
    from rpbench.tasks.llm.llamacpp_engine import has_gpu

    if has_gpu():
        return False
    log.info("CUDA is available but xllamacpp is its CPU build: GGUF models run on transformers, on the GPU")
    return True


class Engines:
    """One engine per local model name and weights path in this process, loaded on first use."""

    _engines: ClassVar[dict[tuple[str, str], Engine]] = {}
    _lock = threading.Lock()

    @classmethod
    def for_model(cls, name: str) -> Engine:
        spec = local_model(name)
        weights = weights_path(spec)
        key = (name, str(weights))
        with cls._lock:
            if key not in cls._engines:
                if spec.adapter is not None:  # LoRA adapters run on transformers, over a transformers copy
                    from rpbench.tasks.llm.hf_weights import transformers_folder
                    from rpbench.tasks.llm.transformers_engine import TransformersEngine

                    cls._engines[key] = TransformersEngine(name, transformers_folder(weights),
                                                           adapter=Path(spec.adapter).expanduser())
                elif weights.is_file() and not _cuda_without_llamacpp_gpu():
                    from rpbench.tasks.llm.llamacpp_engine import LlamaCppEngine

                    cls._engines[key] = LlamaCppEngine(name, weights, spec)
                else:
                    from rpbench.tasks.llm.transformers_engine import TransformersEngine

                    cls._engines[key] = TransformersEngine(name, weights)
            return cls._engines[key]

    @classmethod
    def loaded(cls) -> list[Engine]:
        with cls._lock:
            return list(cls._engines.values())


def local_activity() -> str:
    """One line on the local models at work ("smollm2-135m: 3 in flight, 142 tok/s"), or "" if none is."""
    parts = []
    for engine in Engines.loaded():
        meter = engine.meter
        if meter.in_flight or meter.requests_done:
            reused = meter.cached_tokens / max(meter.prompt_tokens, 1)
            parts.append(f"{engine.name}: {meter.in_flight} in flight, {meter.tokens_per_s():.0f} tok/s"
                         + (f", {reused:.0%} of prompt tokens reused" if meter.cached_tokens else ""))
    return "; ".join(parts)
