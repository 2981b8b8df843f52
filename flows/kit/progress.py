"""Progress on long work: log lines a person can watch and a Prefect progress artifact in the UI.

A stage says what it is doing (``track``); done/total goes to the log at
most every few seconds as work completes, and a heartbeat writes a line at
least every 30 s while the stage runs, so a slow model never leaves minutes of
silence.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("rpbench")
HEARTBEAT_S = 30.0
EVERY_S = 5.0


def in_prefect_run() -> bool:
    """Inside a Prefect flow or task run (outside one, an artifact would start a temporary server)."""
    from prefect.context import FlowRunContext, TaskRunContext

    return TaskRunContext.get() is not None or FlowRunContext.get() is not None


def run_logger() -> logging.Logger | logging.LoggerAdapter[Any]:
    if not in_prefect_run():  # unit tests, plain scripts
        return log
    from prefect import get_run_logger

    return get_run_logger()


class StageProgress:
    """The progress of one stage: phases of done/total, a heartbeat, and a progress artifact."""

    def __init__(self, label: str, heartbeat_s: float = HEARTBEAT_S, every_s: float = EVERY_S) -> None:
        self.label, self.heartbeat_s, self.every_s = label, heartbeat_s, every_s
        self.logger = run_logger()
        self.started = time.monotonic()
        self.phase, self.done, self.total = "starting", 0, 0
        self._last = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._artifact: Any = None
        if in_prefect_run():
            with contextlib.suppress(Exception):  # the UI is a view: a failed upload must not fail the work
                from prefect.artifacts import create_progress_artifact

                # _sync: these helpers return a coroutine inside async tasks unless told otherwise.
                self._artifact = create_progress_artifact(progress=0.0, description=label, _sync=True)  # type: ignore[call-arg]
        self._beat = threading.Thread(target=self._heartbeat, name=f"progress-{label}", daemon=True)

    def __enter__(self) -> StageProgress:
        self.logger.info("%s: started", self.label)
        self._beat.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._update_artifact(100.0)
        self.logger.info("%s: %s in %.0f s", self.label, "failed" if exc[0] else "finished",
                         time.monotonic() - self.started)

    def track(self, phase: str, total: int) -> Callable[[int, int], None]:
        """Begin a phase of ``total`` units; the returned callable takes (done, total) as units finish."""
        with self._lock:
            self.phase, self.done, self.total = phase, 0, total
        self._report(force=True)

        def on_done(done: int, of: int | None = None) -> None:
            with self._lock:
                self.done, self.total = done, of or self.total
            self._report(force=done >= (of or self.total))

        return on_done

    def _line(self) -> tuple[str, float]:
        with self._lock:
            pct = 100.0 * self.done / max(self.total, 1)
            return f"{self.phase} {self.done}/{self.total} ({pct:.0f}%, {time.monotonic() - self.started:.0f} s)", pct

    def _report(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.every_s:
            return
        self._last = now
        line, pct = self._line()
        self.logger.info("%s: %s", self.label, line)
        self._update_artifact(pct)

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            if time.monotonic() - self._last >= self.heartbeat_s:
                line, _ = self._line()
                self.logger.info("%s: still working: %s", self.label, line)
                self._last = time.monotonic()

    def _update_artifact(self, pct: float) -> None:
        if self._artifact is None:
            return
        with contextlib.suppress(Exception):
            from prefect.artifacts import update_progress_artifact

            update_progress_artifact(self._artifact, progress=pct, _sync=True)  # type: ignore[call-arg]
