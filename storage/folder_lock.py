"""One command at a time per run folder.

Two commands writing one ``--out`` would send many of the same paid requests twice and each report only
its own share of the calls. A command holds an exclusive ``flock`` on a lock file of the folder's resolved
path while it runs, kept under rpbench's cache folder (``locks/``), not in the run folder: a command that
stops on bad input leaves the folder untouched, and a published run holds only its outputs. The kernel lets
go of the lock when the process ends, however it ends (a kill included), so a stale lock never blocks a
rerun. The file says who holds it, for the error the second command prints.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.paths import cache_dir


def lock_path(folder: str | Path) -> Path:
    """Where ``folder``'s lock lives: one file per resolved path, under the cache folder."""
    key = hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:32]
    return cache_dir() / "locks" / f"{key}.lock"


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return "another process"
    # The holder empties the file before it writes itself in: read in between, it names nobody yet.
    if not isinstance(info, dict) or not {"pid", "started", "command"} <= set(info):
        return "another process"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("started", 0)))
    return f"process {info.get('pid', '?')} (since {started}: {info.get('command', '?')})"


@contextlib.contextmanager
def folder_lock(folder: str | Path, option: str = "--out") -> Iterator[None]:
    """Hold ``folder``'s lock for the block; an InputError naming the holder if another process has it."""
    path = lock_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
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
