"""Process set-up for commands and tests: offline settings, a quiet Prefect, and a clean shutdown."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
        _stop_launched()  # (but the server it launched as it started)
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
    _stop_launched()
    server_module = sys.modules.get("prefect.server.api.server")
    if server_module is None:
        return
    for server in list(server_module.SubprocessASGIServer._instances.values()):
        with contextlib.suppress(Exception):
            server.stop()


# The temporary server a command launched as it started (``launch_temporary_server``): its process and URL.
_early: dict[str, Any] = {}
_in_command = threading.Event()  # set by the command line's entry point: this process is one command's own


def command_process() -> None:
    """Say that this process runs one command and ends with it (``rpbench``'s entry point): the temporary server
    may then be launched as the command starts. A test or a notebook running commands in its process keeps
    Prefect's own way (one server for the process, started when the first flow needs it)."""
    _in_command.set()


def launch_temporary_server() -> None:
    """Launch Prefect's temporary server as a run's command starts, before Prefect is imported, so that it boots
    (seconds, on the other core) while the command imports and checks its input; the first flow waits for it
    (``start_temporary_server``). Only in a command's own process, from its main thread, when no
    PREFECT_API_URL is in the environment; a server configured in a Prefect profile is found once Prefect is
    loaded, and this one is then stopped unused. A command that ends on an input error stops it at exit."""
    if (_early or not _in_command.is_set() or os.environ.get("PREFECT_API_URL")
            or threading.current_thread() is not threading.main_thread()):
        return
    import importlib.util
    import socket

    from rpbench.flows.kit.running import server_process

    spec = importlib.util.find_spec("prefect")
    if spec is None or spec.origin is None:
        return
    with socket.socket() as probe:  # a port free now; the server takes it a moment later
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app_dir = Path(spec.origin).parent.parent
    # What Prefect's SubprocessASGIServer runs, in a session of its own that ends with this process.
    _early["process"] = server_process.Popen(
        [sys.executable, "-m", "uvicorn", "--app-dir", str(app_dir), "--factory",
         "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port), "--log-level", "error",
         "--lifespan", "on"],
        env={**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"})
    _early["url"] = f"http://127.0.0.1:{port}/api"


def _use_launched_server() -> bool:
    """Point Prefect at the server launched as the command started, once it answers; False when none was, or
    when a Prefect profile configures a server of its own (the launched one is stopped)."""
    process = _early.get("process")
    if process is None:
        return False
    if _early.get("used"):  # a later flow of the same command (the run after its plan)
        return True
    from prefect.context import refresh_global_settings_context
    from prefect.settings import get_current_settings

    if get_current_settings().api.url:
        _stop_launched()
        return False
    import time

    import httpx

    from rpbench.flows.kit.scale.shared_limits import OWN_SERVER_ENV

    url, timeout = _early["url"], float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120"))
    deadline = time.monotonic() + timeout
    with httpx.Client() as client:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"Prefect's temporary server ended as it started (exit {process.returncode}); "
                                   "its messages are above. Set PREFECT_API_URL to use a server of your own")
            try:
                if client.get(f"{url}/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"Prefect's temporary server did not answer within {timeout:.0f} s "
                                   "(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS)")
            time.sleep(0.05)
    os.environ["PREFECT_API_URL"] = url
    os.environ[OWN_SERVER_ENV] = url  # no other process shares it: the gateway's bounds are the limits
    os.environ.setdefault("PREFECT_UI_URL", "")  # it serves no UI: no "View at" link to a page that is not there
    refresh_global_settings_context()  # Prefect reads its settings once, at import: read them again
    logging.getLogger("rpbench").info("Prefect: a temporary server on %s for this command (set PREFECT_API_URL "
                                      "to use a server of your own)", url.removesuffix("/api"))
    _early["used"] = True
    return True


def _stop_launched(kill: bool = False) -> None:
    process = _early.pop("process", None)
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(OSError):
        process.kill() if kill else process.terminate()
    if _in_command.is_set() and not kill:
        return  # it ends by itself on SIGTERM; the command need not wait to exit
    with contextlib.suppress(Exception):
        process.wait(timeout=5)
    if process.poll() is None:
        with contextlib.suppress(OSError):
            process.kill()


def start_temporary_server() -> None:
    """Start Prefect's temporary server now, from the main thread, in a session of its own, if this process
    will need one (no PREFECT_API_URL); or wait for the one the command launched as it started.

    Ctrl-C reaches the terminal's whole process group: left in it, the server died at once while the run
    still had calls in flight, and the flow then waited on it for good. In its own session the server outlives
    the signal, the run stops as it means to (``flows.kit.running.interrupts``), and ``shutdown_prefect`` stops it.
    It is also told to end when this process dies, even by SIGKILL (the parent-death signal belongs to the
    thread that started it, hence the main thread). Prefect then uses this server for the run.
    """
    if threading.current_thread() is not threading.main_thread() or _use_launched_server():
        return
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return
    from prefect.server.api import server as prefect_server

    from rpbench.flows.kit.running import server_process

    prefect_server.subprocess = server_process  # only this module's view changes
    prefect_server.SubprocessASGIServer().start()


@contextlib.contextmanager
def heartbeats_where_watched() -> Iterator[None]:
    """Prefect's flow-run heartbeats only on a server that outlives the run (PREFECT_API_URL), where an
    automation may watch them to mark a killed run Crashed. A temporary server ends with the command, so no one
    is left to watch; and Prefect's heartbeat thread sleeps a second at a time, which the end of every flow run
    waited out (benchmarks/startup.py measures the end of a run)."""
    from rpbench.flows.kit.scale.shared_limits import own_server

    if not own_server():
        yield
        return
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def kill_prefect_server() -> None:
    """Kill the temporary server at once (a run quitting without the usual shutdown)."""
    _stop_launched(kill=True)
    server_module = sys.modules.get("prefect.server.api.server")
    if server_module is None:
        return
    for server in list(server_module.SubprocessASGIServer._instances.values()):
        process = server.server_process
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()
