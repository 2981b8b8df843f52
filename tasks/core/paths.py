"""Where rpbench keeps files it derives once and reuses across runs (tokenizers, re-encoded weights)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


def cache_dir() -> Path:
    """RPBENCH_CACHE_DIR, or ``~/.cache/rpbench``."""
    return Path(os.environ.get("RPBENCH_CACHE_DIR", Path.home() / ".cache" / "rpbench"))


@contextlib.contextmanager
def one_writer(entry: Path, locks_apart: bool = False) -> Iterator[None]:
    """Held while ``entry`` (a file or folder under the cache) is checked and made: another thread or process
    making the same entry (two commands, two test workers) waits, then finds it made. Without it, the second
    one's swap of a folder into place pulled it from under the first while that one read it. ``locks_apart``:
    the lock file lives under the cache's ``locks/``, keyed by the entry's path, not beside it (a folder others
    read, such as a team's releases, gains no file but what is written into it)."""
    import hashlib

    if locks_apart:
        key = hashlib.sha256(str(entry.resolve()).encode()).hexdigest()[:32]
        lock = cache_dir() / "locks" / f"{key}.lock"
    else:
        lock = entry.with_name(f"{entry.name}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    # A lock of its own open file each time: flock then keeps out other threads of this process too.
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # let go by the kernel however the process ends
        yield
    finally:
        os.close(fd)
