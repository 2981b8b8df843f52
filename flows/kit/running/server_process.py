"""``subprocess`` as Prefect's temporary server module sees it (``environment.start_temporary_server``): the same,
but ``Popen`` starts the server in a session of its own, so a terminal's Ctrl-C does not reach it, and (on Linux)
tells it to end when the process that started it dies, however that dies.

A module of its own rather than a module object made at run time: whatever is pickled with a reference to it
(Dask ships stage tasks to its workers) pickles it by name.
"""

from __future__ import annotations

import functools
import signal
import subprocess
import sys
from subprocess import *  # noqa: F403  (the rest of ``subprocess``, unchanged)
from typing import Any


@functools.cache
def _prctl() -> Any:
    """libc's prctl, looked up in the parent: a child between fork and exec should not load libraries."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl


def _end_with_parent() -> None:
    """In the child before it runs: SIGTERM when the parent dies."""
    _prctl()(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


class Popen(subprocess.Popen):  # type: ignore[no-redef]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("start_new_session", True)
        if sys.platform == "linux":
            _prctl()
            kwargs.setdefault("preexec_fn", _end_with_parent)
        super().__init__(*args, **kwargs)
