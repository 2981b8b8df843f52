"""The report's libraries (matplotlib, scipy) and the table writer's (pyarrow's pandas) imported while a run
waits on its models, not at its end.

Imported by the report stage itself they cost about a second between the run's last answer and its exit. A
thread of their own starts with the run's first flow and imports them once the first request is out (started
with the flow, it slowed the first request: benchmarks/startup.py); the report stage waits for it first, so the
two never import the same modules at once. A run that sends nothing (its calls cached) leaves them to the
report stage.
"""

from __future__ import annotations

import contextlib
import threading

from rpbench.tasks.llm.gateway import requests_waiting

_started = threading.Lock()
_report_begins = threading.Event()
_thread: threading.Thread | None = None


def _load() -> None:
    from rpbench.storage.tables import load_table_libraries
    from rpbench.tasks.reports.render import load_chart_libraries

    while not requests_waiting.wait(timeout=0.1):
        if _report_begins.is_set():
            return
    with contextlib.suppress(Exception):  # an import that fails fails again, with its message, where it is used
        load_table_libraries()
        load_chart_libraries()


def load_report_libraries_soon() -> None:
    """Start the thread, once per process."""
    global _thread
    if _started.acquire(blocking=False):
        _thread = threading.Thread(target=_load, name="rpbench-report-imports", daemon=True)
        _thread.start()


def report_libraries_loaded() -> None:
    """Called as a report stage begins: the thread has finished (or will not import), so the stage imports
    alone."""
    _report_begins.set()
    if _thread is not None:
        _thread.join()
