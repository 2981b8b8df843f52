"""The engines behind ``local/<name>``: what a request and a result are, and which engine serves a name.

A GGUF file runs on llama.cpp (``llamacpp``): continuous batching over
parallel slots, reuse of cached prompt prefixes, the file's own quantization.
A transformers model folder runs on transformers (``hf``),
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
from pathlib import Path
from typing import ClassVar

from rpbench.tasks.llm.local.generation import Engine
from rpbench.tasks.llm.local.models import local_model, weights_path

log = logging.getLogger("rpbench.local_model")


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
    from rpbench.tasks.llm.local.llamacpp import has_gpu

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
                    from rpbench.tasks.llm.local.hf import TransformersEngine
                    from rpbench.tasks.llm.local.hf_weights import transformers_folder

                    cls._engines[key] = TransformersEngine(name, transformers_folder(weights),
                                                           adapter=Path(spec.adapter).expanduser())
                elif weights.is_file() and not _cuda_without_llamacpp_gpu():
                    from rpbench.tasks.llm.local.llamacpp import LlamaCppEngine

                    cls._engines[key] = LlamaCppEngine(name, weights, spec)
                else:
                    from rpbench.tasks.llm.local.hf import TransformersEngine

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
