"""Errors of one call that need nothing of litellm: the worker pool starts (and fails) without importing it."""

from __future__ import annotations


class WorkerCallError(Exception):
    """A call that failed in a gateway worker process, which already judged it: ``transient`` or not, and
    ``fatal`` (the model cannot be used at all) or not."""

    def __init__(self, message: str, transient: bool, fatal: bool = False) -> None:
        super().__init__(message)
        self.transient, self.fatal = transient, fatal


class MissingKeyError(RuntimeError):
    """A model's key variable is absent from the environment: a permanent failure, never retried."""
