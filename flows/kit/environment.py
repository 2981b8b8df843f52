"""Process set-up for commands and tests: offline settings, a quiet Prefect, and a clean shutdown."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

from rpbench.tasks.core.offline import OFFLINE_ENV
from rpbench.tasks.core.secrets import install_log_redaction

PREFECT_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # Prefect's console and UI handlers also carry our own loggers' lines (model loading, progress).
    "PREFECT_LOGGING_EXTRA_LOGGERS": "rpbench",
    # The local model logs from its own worker thread, outside any flow run: print those lines, do not warn.
    "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
    # The temporary server's first start runs its database migrations; on a busy 2-core machine that
    # can take longer than Prefect's default 20 s.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}


def setup_environment(prefect_home: Path | None = None) -> None:
    """Defaults that make a command work offline with no configuration (each can be overridden)."""
    for key, value in {**OFFLINE_ENV, **PREFECT_ENV}.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("PREFECT_HOME", str(prefect_home or Path.cwd() / ".prefect"))
    install_log_redaction()
    logging.getLogger("rpbench").setLevel(logging.INFO)
    for noisy in ("httpx", "LiteLLM", "litellm", "transformers", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def shutdown_prefect() -> None:
    """Drain Prefect's log and event workers, then stop the temporary server, in that order.

    Left to interpreter exit, the workers may try to flush after the server is
    gone and print tracebacks; a finished command must end clean.
    """
    if "prefect" not in sys.modules:  # this command never touched Prefect (help, an input error): nothing to stop
        return
    try:
        from prefect.events.worker import EventsWorker
        from prefect.logging.handlers import APILogWorker
        from prefect.server.api.server import SubprocessASGIServer
    except ImportError:
        return
    for worker in (APILogWorker, EventsWorker):
        with contextlib.suppress(Exception):
            worker.drain_all(timeout=10)
    for name in ("prefect", "prefect.events", "prefect.server", "uvicorn", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    for server in list(SubprocessASGIServer._instances.values()):
        with contextlib.suppress(Exception):
            server.stop()
