"""Process set-up for commands and tests: offline settings, a quiet Prefect, and a clean shutdown."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
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
    except ImportError:
        return
    for worker in (APILogWorker, EventsWorker):
        with contextlib.suppress(Exception):
            worker.drain_all(timeout=10)
    for name in ("prefect", "prefect.events", "prefect.server", "uvicorn", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    # A temporary server was started in this process only if its module was loaded: importing it just to find
    # none costs seconds (it builds the whole API) in every command run against a Prefect server of its own.
    server_module = sys.modules.get("prefect.server.api.server")
    if server_module is None:
        return
    for server in list(server_module.SubprocessASGIServer._instances.values()):
        with contextlib.suppress(Exception):
            server.stop()


def start_temporary_server() -> None:
    """Start Prefect's temporary server now, from the main thread, in a session of its own, if this process
    will need one (no PREFECT_API_URL).

    Ctrl-C reaches the terminal's whole process group: left in it, the server died at once while the run
    still had calls in flight, and the flow then waited on it for good. In its own session the server outlives
    the signal, the run stops as it means to (``flows.kit.running.interrupts``), and ``shutdown_prefect`` stops it.
    It is also told to end when this process dies, even by SIGKILL (the parent-death signal belongs to the
    thread that started it, hence the main thread). Prefect then uses this server for the run.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return
    from prefect.server.api import server as prefect_server

    from rpbench.flows.kit.running import server_process

    prefect_server.subprocess = server_process  # only this module's view changes
    prefect_server.SubprocessASGIServer().start()


def kill_prefect_server() -> None:
    """Kill the temporary server at once (a run quitting without the usual shutdown)."""
    server_module = sys.modules.get("prefect.server.api.server")
    if server_module is None:
        return
    for server in list(server_module.SubprocessASGIServer._instances.values()):
        process = server.server_process
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()
