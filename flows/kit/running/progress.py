"""Progress on long work: log lines a person can watch, a live bar on a terminal, a Prefect progress artifact.

A stage says what it is doing (``track``); done/total goes to the log at
most every few seconds as work completes, and a heartbeat writes a line at
least every 30 s while the stage runs, so a slow model never leaves minutes of
silence. Each line also says what is under way (calls done and in flight, the
local model's tokens/s, from the stage's ``activity``), the time spent and
an estimate of the time left. On a terminal, the CLI also draws one live bar
per running stage (rich); in Prefect, the stage keeps a progress artifact.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

log = logging.getLogger("rpbench")
HEARTBEAT_S = 30.0
EVERY_S = 5.0
TICK_S = 1.0


def in_prefect_run() -> bool:
    """Inside a Prefect flow or task run (outside one, an artifact would start a temporary server)."""
    from prefect.context import FlowRunContext, TaskRunContext

    return TaskRunContext.get() is not None or FlowRunContext.get() is not None


def run_logger() -> logging.Logger | logging.LoggerAdapter[Any]:
    if not in_prefect_run():  # unit tests, plain scripts
        return log
    from prefect import get_run_logger

    return get_run_logger()


def _duration(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60:02d} s" if whole >= 60 else f"{whole} s"


class TerminalBars:
    """One rich progress bar per running stage, drawn only when stderr is a terminal.

    Off when stderr is not a TTY (CI, pipes, Prefect workers) or when RPBENCH_PROGRESS_BAR=0; the log
    lines carry the same figures either way. While bars are drawn, Prefect's console log handlers print
    through the bars' console, so log lines scroll above the bars instead of tearing through them.
    """

    _lock = threading.Lock()
    _progress: Any = None
    _open = 0
    _swapped: ClassVar[list[tuple[Any, Any]]] = []

    @staticmethod
    def _console_handlers() -> list[Any]:
        from prefect.logging.handlers import PrefectConsoleHandler

        loggers = [logging.getLogger(), *(logging.getLogger(name) for name in list(logging.root.manager.loggerDict))]
        found: list[Any] = []
        for logger in loggers:
            for handler in getattr(logger, "handlers", []):
                if isinstance(handler, PrefectConsoleHandler) and handler not in found:
                    found.append(handler)
        return found

    @classmethod
    def wanted(cls) -> bool:
        return sys.stderr.isatty() and os.environ.get("RPBENCH_PROGRESS_BAR", "1") != "0"

    @classmethod
    def add(cls, label: str) -> Any:
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with cls._lock:
            if cls._progress is None:
                cls._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                         TextColumn("{task.fields[count]}"), TimeElapsedColumn(),
                                         TextColumn("{task.fields[activity]}"), transient=True,
                                         console=Console(stderr=True, markup=False, highlight=False))
                cls._swapped = [(h, h.console) for h in cls._console_handlers()]
                for handler, _ in cls._swapped:
                    handler.console = cls._progress.console
                cls._progress.start()
            cls._open += 1
            return cls._progress.add_task(escape(label), total=None, count="", activity="")

    @classmethod
    def update(cls, task_id: Any, **fields: Any) -> None:
        from rich.markup import escape

        with cls._lock:
            if cls._progress is not None:
                cls._progress.update(task_id, **{k: escape(v) if isinstance(v, str) else v for k, v in fields.items()})

    @classmethod
    def remove(cls, task_id: Any) -> None:
        with cls._lock:
            if cls._progress is None:
                return
            cls._progress.remove_task(task_id)
            cls._open -= 1
            if cls._open == 0:
                cls._progress.stop()
                cls._progress = None
                for handler, console in cls._swapped:
                    handler.console = console
                cls._swapped = []


class StageProgress:
    """The progress of one stage: phases of done/total, a heartbeat, a terminal bar and a progress artifact."""

    def __init__(self, label: str, heartbeat_s: float = HEARTBEAT_S, every_s: float = EVERY_S,
                 activity: Callable[[], str] | None = None) -> None:
        self.label, self.heartbeat_s, self.every_s = label, heartbeat_s, every_s
        # What is under way right now ("calls 12 done, 3 in flight; ..."), asked for at each line.
        self.activity = activity
        self.logger = run_logger()
        self.started = time.monotonic()
        self.phase, self.done, self.total = "starting", 0, 0
        self._phase_started = self.started
        self._last = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._artifact: Any = None
        self._bar: Any = None
        if in_prefect_run():
            with contextlib.suppress(Exception):  # the UI is a view: a failed upload must not fail the work
                from prefect.artifacts import create_progress_artifact

                # _sync: these helpers return a coroutine inside async tasks unless told otherwise.
                self._artifact = create_progress_artifact(progress=0.0, description=label, _sync=True)  # type: ignore[call-arg]
        self._beat = threading.Thread(target=self._heartbeat, name=f"progress-{label}", daemon=True)

    def __enter__(self) -> StageProgress:
        self.logger.info("%s: started", self.label)
        self._last = time.monotonic()
        if TerminalBars.wanted():
            with contextlib.suppress(Exception):  # a bar that cannot draw must not stop the work
                self._bar = TerminalBars.add(self.label)
        self._beat.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        ending = f"{'failed' if exc[0] else 'finished'} in {_duration(time.monotonic() - self.started)}"
        self._update_artifact(100.0, f"{self.label}: {ending}")
        if self._bar is not None:
            TerminalBars.remove(self._bar)
        self.logger.info("%s: %s", self.label, ending)

    def track(self, phase: str, total: int) -> Callable[[int, int], None]:
        """Begin a phase of ``total`` units; the returned callable takes (done, total) as units finish."""
        with self._lock:
            self.phase, self.done, self.total = phase, 0, total
            self._phase_started = time.monotonic()
        self._report(force=True)

        def on_done(done: int, of: int | None = None) -> None:
            with self._lock:
                self.done, self.total = done, of or self.total
            self._report(force=done >= (of or self.total))

        return on_done

    def _line(self) -> tuple[str, float]:
        now = time.monotonic()
        with self._lock:
            phase, done, total, phase_started = self.phase, self.done, self.total, self._phase_started
        pct = 100.0 * done / max(total, 1)
        parts = [f"{phase} {done}/{total} ({pct:.0f}%)"]
        activity = ""
        if self.activity is not None:
            with contextlib.suppress(Exception):  # a figure that cannot be read is left out, never guessed
                activity = self.activity()
        if activity:
            parts.append(activity)
        timing = f"{_duration(now - self.started)} elapsed"
        if 0 < done < total:
            timing += f", about {_duration((now - phase_started) / done * (total - done))} left in this phase"
        parts.append(timing)
        if self._bar is not None:
            TerminalBars.update(self._bar, description=f"{self.label}: {phase}", completed=done, total=total or None,
                                count=f"{done}/{total}", activity=activity)
        return " · ".join(parts), pct

    def _report(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.every_s:
            return
        self._publish()

    def _publish(self, prefix: str = "") -> None:
        """One progress line: to the log, and as the progress artifact's percentage and description."""
        self._last = time.monotonic()
        line, pct = self._line()
        self.logger.info("%s: %s%s", self.label, prefix, line)
        self._update_artifact(pct, f"{self.label}: {line}")

    def _heartbeat(self) -> None:
        # Wakes often, so a line is never more than a tick late past the heartbeat.
        while not self._stop.wait(min(TICK_S, self.heartbeat_s / 3)):
            if time.monotonic() - self._last >= self.heartbeat_s:
                self._publish("still working: ")
            elif self._bar is not None:
                self._line()  # keep the bar's figures fresh between log lines

    def _update_artifact(self, pct: float, description: str | None = None) -> None:
        """The UI's progress artifact: the percentage and, with it, the same line the log shows."""
        if self._artifact is None:
            return
        with contextlib.suppress(Exception):
            from prefect.artifacts import update_progress_artifact

            update_progress_artifact(self._artifact, progress=pct, description=description,  # type: ignore[call-arg]
                                     _sync=True)
