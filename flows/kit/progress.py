"""Progress on long work: a Prefect progress artifact in the UI and log lines in the terminal."""

from __future__ import annotations

import logging
import time

log = logging.getLogger("rpbench")


def run_logger() -> logging.Logger | logging.LoggerAdapter:
    try:
        from prefect import get_run_logger

        return get_run_logger()
    except Exception:  # outside a flow run (unit tests, plain scripts)
        return log


class Progress:
    """Reports ``done/total`` at most every few seconds, and always at the end."""

    def __init__(self, description: str, total: int, every_s: float = 5.0) -> None:
        self.description, self.total, self.every_s = description, total, every_s
        self._last = 0.0
        self._started = time.monotonic()
        self._artifact = None
        self._logger = run_logger()
        try:
            from prefect.artifacts import create_progress_artifact

            # _sync: these helpers return a coroutine inside async tasks unless told otherwise.
            self._artifact = create_progress_artifact(progress=0.0, description=description, _sync=True)
        except Exception:
            self._artifact = None

    def __call__(self, done: int, total: int | None = None) -> None:
        total = total or self.total
        now = time.monotonic()
        if done < total and now - self._last < self.every_s:
            return
        self._last = now
        pct = 100.0 * done / max(total, 1)
        self._logger.info("%s: %d/%d (%.0f%%, %.0f s)", self.description, done, total, pct, now - self._started)
        if self._artifact is not None:
            try:
                from prefect.artifacts import update_progress_artifact

                update_progress_artifact(self._artifact, progress=pct, _sync=True)
            except Exception:
                self._artifact = None
