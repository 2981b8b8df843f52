"""GGUF models on llama.cpp, in process, through xllamacpp's bindings of llama.cpp's own server loop.

Why this engine (measured in ``benchmarks/local_model.py``; docs/performance.md
shows its figures): llama.cpp runs the GGUF's quantized weights directly, where
transformers de-quantizes them to float32; its server loop batches
continuously (a request joins the running batch at the next decoding step and
leaves when it ends, instead of waiting for the longest row); each slot keeps
its last prompt's attention cache, and a new request goes to the slot whose
cached prompt shares the longest prefix with it, so a long shared system part
or a growing dialogue history is read once. xllamacpp ships prebuilt wheels,
so set-up compiles nothing.

Each request carries its own sampler (temperature, top-p, seed), so a row's
randomness does not depend on its neighbours; a JSON schema becomes an
LLGuidance grammar for that row alone, in compact form (no free whitespace,
which a small model otherwise spends its token budget on). Only what the
models file sets is applied: llama.cpp's own top-k and min-p defaults are
switched off, so ``temperature`` means what it means at any OpenAI-style API.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import secrets
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rpbench.tasks.llm.local.generation import EngineMeter, GenRequest, GenResult
from rpbench.tasks.llm.local.models import LocalModelSpec

log = logging.getLogger("rpbench.local_model")
DEFAULT_CONTEXT = 8192
PROMPT_CACHE_MIB = 2048


class LocalModelError(RuntimeError):
    """llama.cpp refused a request (for example a prompt longer than the slot's context)."""


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


THREADS_ENV = "RPBENCH_LOCAL_THREADS"


def _threads() -> int:
    """CPU threads for a model that names none: RPBENCH_LOCAL_THREADS, else every usable core. A machine shared
    with other work wants fewer: llama.cpp's threads wait for each other by spinning, so one core taken by
    another process slows every step of all of them."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise ValueError(f"{THREADS_ENV}: expected a whole number of threads >= 1, got {raw!r}")
        return int(raw)
    return _usable_cores()


def _trained_context(path: Path) -> int | None:
    import gguf

    reader = gguf.GGUFReader(str(path))
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE)
    field = reader.get_field(f"{arch.contents()}.context_length") if arch is not None else None
    return int(field.contents()) if field is not None else None


def strict(schema: Any) -> Any:
    """``schema`` with every object closed to keys it does not list (unless it says otherwise).

    JSON schema lets an object carry any extra key by default, and LLGuidance follows the standard: a
    small model then fills a two-key verdict with pages of invented keys. Strict mode, as OpenAI's
    structured outputs and xgrammar apply it.
    """
    if isinstance(schema, dict):
        out = {key: strict(value) for key, value in schema.items()}
        if out.get("type") == "object" and "properties" in out:
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [strict(value) for value in schema]
    return schema


def has_gpu() -> bool:
    """The installed xllamacpp build sees a GPU (its CUDA/ROCm/Vulkan wheels do; PyPI's CPU wheel never)."""
    import xllamacpp

    kinds = xllamacpp.ggml_backend_dev_type
    return any(d.get("type") in (kinds.GGML_BACKEND_DEVICE_TYPE_GPU, kinds.GGML_BACKEND_DEVICE_TYPE_IGPU)
               for d in xllamacpp.get_device_info())


@functools.lru_cache(maxsize=256)
def _grammar(schema_json: str) -> str:
    import xllamacpp

    schema = strict(json.loads(schema_json))
    # LLGuidance reads this key: compact JSON, keys in the schema's order.
    return str(xllamacpp.json_schema_to_grammar({**schema, "x-guidance": {"whitespace_flexible": False}}))


class LlamaCppEngine:
    """One GGUF model behind llama.cpp's server loop; ``submit`` is thread-safe and returns a Future."""

    def __init__(self, name: str, weights: Path, spec: LocalModelSpec) -> None:
        self.name, self.weights, self.spec = name, weights, spec
        self.meter = EngineMeter()
        self._server: Any = None
        self._load_lock = threading.Lock()
        self._load_error: BaseException | None = None
        # Callers block in llama.cpp (which releases the GIL) while their request waits for a slot or
        # decodes; enough threads that the slots never wait on Python.
        self._pool = ThreadPoolExecutor(max_workers=max(32, 4 * spec.parallel),
                                        thread_name_prefix=f"rpbench-llamacpp-{name}")

    def submit(self, request: GenRequest) -> Future:
        return self.meter.track(self._pool.submit(self._generate, request))

    def generate(self, request: GenRequest) -> GenResult:
        return self.submit(request).result()

    # -- loading --------------------------------------------------------------------------------
    def _loaded(self) -> Any:
        with self._load_lock:
            if self._load_error is not None:
                raise LocalModelError(f"local model {self.name} failed to load: {self._load_error}")
            if self._server is None:
                try:
                    self._server = self._load()
                except Exception as exc:  # every later caller gets the same error, never another model
                    self._load_error = exc
                    raise LocalModelError(f"local model {self.name} failed to load: {exc}") from exc
            return self._server

    def _load(self) -> Any:
        import xllamacpp

        started = time.monotonic()
        path = self.weights
        if self.spec.requantize:
            from rpbench.tasks.llm.local.gguf_requantize import requantized

            path = requantized(path, self.spec.requantize)
        context = self.spec.context or min(_trained_context(path) or DEFAULT_CONTEXT, DEFAULT_CONTEXT)
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_parallel = self.spec.parallel
        params.n_ctx = context * self.spec.parallel
        threads = self.spec.threads or _threads()
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.cache_ram_mib = PROMPT_CACHE_MIB
        params.verbosity = 0  # llama.cpp's own per-request log lines would drown ours
        params.endpoint_metrics = True  # counters read by ``metrics`` (benchmarks, tests)
        # The bindings also listen on a loopback port; a random key keeps other local programs off it.
        params.api_keys = [secrets.token_hex(16)]
        gpus = has_gpu()
        if gpus:  # a GPU build of xllamacpp on a machine with a GPU: put every layer there
            params.n_gpu_layers = 999
        server = xllamacpp.Server(params)
        slots = f"{self.spec.parallel} slot{'s' if self.spec.parallel > 1 else ''}"
        log.info("local model %s ready in %.1f s (llama.cpp, %s, %s of %d tokens, %s)", self.name,
                 time.monotonic() - started, path.name, slots, context,
                 "GPU" if gpus else f"{threads} CPU threads")
        return server

    def metrics(self) -> dict[str, float]:
        """llama.cpp's own counters (``llamacpp:`` prefix dropped): tokens predicted, decode calls, reuse."""
        found: dict[str, float] = {}
        for line in str(self._loaded().handle_metrics()).splitlines():
            if line.startswith("llamacpp:"):
                name, _, value = line.partition(" ")
                found[name.removeprefix("llamacpp:")] = float(value)
        return found

    # -- one request ----------------------------------------------------------------------------
    def _body(self, request: GenRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_k": 0,
            "min_p": 0.0,
            "top_p": request.top_p if request.top_p is not None else 1.0,
            "cache_prompt": self.spec.reuse_prefixes,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.repetition_penalty != 1.0:
            body["repeat_penalty"] = request.repetition_penalty
        if request.schema is not None:
            # Not sort_keys: LLGuidance writes properties in the schema's order (reasoning before score).
            body["grammar"] = _grammar(json.dumps(request.schema))
        return body

    def _generate(self, request: GenRequest) -> GenResult:
        out = self._loaded().handle_chat_completions(self._body(request))
        if "error" in out:
            error = out["error"]
            raise LocalModelError(f"local model {self.name}: {error.get('message', error)}")
        choice, usage = out["choices"][0], out["usage"]
        return GenResult(
            text=str(choice["message"].get("content") or "").strip(),
            prompt_tokens=int(usage["prompt_tokens"]),
            completion_tokens=int(usage["completion_tokens"]),
            finish_reason=str(choice.get("finish_reason") or "stop"),
            cached_tokens=int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0),
        )
