"""One command at a time per run folder.

Two commands writing one ``--out`` would send many of the same paid requests twice and each report only
its own share of the calls. A command holds an exclusive ``flock`` on ``<out>/.rpbench-lock`` while it runs;
the kernel lets go of it when the process ends, however it ends (a kill included), so a stale lock never
blocks a rerun. The file says who holds it, for the error the second command prints.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from rpbench.tasks.core.errors import InputError

LOCK_NAME = ".rpbench-lock"


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return "another process"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("started", 0)))
    return f"process {info.get('pid', '?')} (since {started}: {info.get('command', '?')})"


@contextlib.contextmanager
def folder_lock(folder: str | Path, option: str = "--out") -> Iterator[None]:
    """Hold ``folder``'s lock for the block; an InputError naming the holder if another process has it."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"{option} {folder}: in use by {_holder(path)}; wait for it to finish or give "
                             "another folder") from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "started": time.time(),
                                 "command": " ".join(["rpbench", *sys.argv[1:]])[:300]}).encode())
        yield
    finally:
        os.close(fd)  # releases the lock
