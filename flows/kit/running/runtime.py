"""What the stages of a run share in one process: the call cache and the gateway.

Prefect tasks receive only small, hashable parameters (paths and names); they
look the live objects up here, built once per process and per (models file,
call cache). Each stage takes a fork of the gateway with its own accounting.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from rpbench.flows.kit.front.registry import run_models
from rpbench.flows.kit.scale.shared_limits import install_shared_limits
from rpbench.tasks.core.secrets import install_log_redaction
from rpbench.tasks.llm.cache import CallCache
from rpbench.tasks.llm.gateway import Gateway

DEFAULT_CACHE = Path(".rpbench") / "calls.sqlite"

_gateways: dict[tuple[str | None, str, str], Gateway] = {}
_lock = threading.Lock()


def shared_gateway(models_file: str | None, cache: str | None) -> Gateway:
    """The process's gateway for a models file and a call cache (keys come from the environment only)."""
    install_log_redaction()
    install_shared_limits()
    cache_path = str(Path(cache) if cache else DEFAULT_CACHE)
    # The run's configuration (as it read the file when it started), and keyed on what it says: a process
    # that serves runs for days gives a later run that read an edited file (or environment override) a
    # gateway of its own, as the stage cache keys do, never the config it first read.
    config = run_models(models_file)
    key = (models_file, cache_path, hashlib.sha256(config.model_dump_json().encode()).hexdigest())
    with _lock:
        if key not in _gateways:
            _gateways[key] = Gateway(config, CallCache(cache_path))
        return _gateways[key]


def new_run() -> None:
    """A flow run starts: replies the process's gateways stored before now are an earlier run's (a rerun
    in the same process heals their failures, as a rerun in a new process does)."""
    with _lock:
        for gateway in _gateways.values():
            gateway.forget_written()
