"""What a flow run shares with its tasks: the run folder and the gateway.

Prefect tasks receive only small, hashable parameters (paths and names); they
look the live objects up here, built once per process and per run folder.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rpbench import prompts
from rpbench.storage.runs import RunDir
from rpbench.storage.schemas import CALLS
from rpbench.storage.tables import read_rows
from rpbench.tasks.llm import CallCache, Gateway, load_models_config
from rpbench.tasks.llm.ledger import summarize_calls
from rpbench.tasks.core.secrets import install_log_redaction

DEFAULT_CACHE = Path(".rpbench") / "calls.sqlite"


@dataclass
class Runtime:
    run: RunDir
    gateway: Gateway
    models_path: str | None
    templates: dict[str, str] = field(default_factory=dict)  # prompt templates this run rendered: path -> SHA-256

    @contextlib.asynccontextmanager
    async def calls(self) -> AsyncIterator[Gateway]:
        """The gateway for a task's calls; its HTTP session and worker processes on this event loop close after."""
        try:
            yield self.gateway
        finally:
            await self.gateway.aclose()

    def finish(self, **sections: Any) -> dict[str, Any]:
        """Flush call accounting into the run's ``calls`` table and rewrite the manifest."""
        self.gateway.ledger.flush(self.run.table(CALLS))
        totals = summarize_calls(read_rows(self.run.table(CALLS), CALLS))
        return self.run.write_manifest(
            config=self.gateway.config.redacted(),
            models_file=self.models_path,
            models=totals.pop("models"),
            prompt_templates=dict(sorted(self.templates.items())),
            totals=totals,
            **sections,
        )


_runtimes: dict[tuple[str, str | None, str | None], Runtime] = {}
_lock = threading.Lock()


def get_runtime(run_dir: str | Path, models: str | None = None, cache: str | None = None) -> Runtime:
    """The run's shared objects; prompts rendered from here on in the calling context count as this run's."""
    install_log_redaction()
    key = (str(Path(run_dir).resolve()), models, cache)
    with _lock:
        if key not in _runtimes:
            config = load_models_config(models)
            cache_path = Path(cache) if cache else DEFAULT_CACHE
            _runtimes[key] = Runtime(RunDir(Path(run_dir)), Gateway(config, CallCache(cache_path)), models)
        runtime = _runtimes[key]
    prompts.record_into(runtime.templates)
    return runtime
