"""A durable cache of completed LLM calls, keyed by the request's identity.

SQLite in WAL mode: each completed call is one committed row, so a process
killed at any moment leaves every earlier row intact and no half-written one.
A rerun looks a request up before sending it and repeats no completed call
(the idea of lm-evaluation-harness's CachingLM).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from rpbench.tasks.core.errors import InputError

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    response TEXT NOT NULL,
    created REAL NOT NULL DEFAULT (julianday('now'))
)
"""
# Batches submitted to a provider's batch API, by the digest of what they ask (``batches``): a run killed while
# one is in flight polls it again instead of submitting it twice.
BATCHES = """
CREATE TABLE IF NOT EXISTS batches (
    digest TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    created REAL NOT NULL DEFAULT (julianday('now'))
)
"""


# Requests being sent, by cache key (``claims``): a run sharing the cache with another (two runs at once, Dask
# workers) waits for that one's reply instead of sending the same request again. Sent twice, it is paid twice,
# and a sampling model could answer each differently while the cache keeps one of the answers.
CLAIMS = """
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    at REAL NOT NULL
)
"""
HOST = socket.gethostname()


@dataclass(frozen=True)
class Claim:
    """Who is sending a request (``host:pid:instance``) and since when (seconds since the epoch)."""

    owner: str
    at: float

    def abandoned(self, patience: float) -> bool:
        """Whether no reply will come from its owner: a process of this machine that is gone, or a claim older
        than ``patience`` seconds (a process elsewhere, one that hangs, a reused process id)."""
        if time.time() - self.at > patience:
            return True
        host, pid, _ = [*self.owner.rsplit(":", 2), "", "", ""][:3]
        if host != HOST or os.name != "posix" or not pid.isdigit():
            return False
        try:
            os.kill(int(pid), 0)  # signal 0: only asks whether the process exists
        except ProcessLookupError:
            return True
        except OSError:
            return False  # it exists (another user's) or cannot be asked
        return False


def request_key(
    *,
    model: str,
    api_base: str | None,
    messages: list[dict[str, Any]],
    sampling: dict[str, Any],
    sample_index: int = 0,
    attempt: int = 0,
    response_schema: dict[str, Any] | None = None,
) -> str:
    """Hash everything that determines a reply: the same request always maps to the same key."""
    identity = {
        "model": model,
        "api_base": api_base or "",
        "messages": messages,
        "sampling": sampling,
        "sample_index": sample_index,
        "attempt": attempt,
        "schema": response_schema,
    }
    # orjson: this runs once per call on the hot path, where the json module with sorted keys is slower.
    blob = orjson.dumps(identity, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return hashlib.sha256(blob).hexdigest()


class CallCache:
    """Thread-safe get/put of completed calls in one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.owner = f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"  # this cache object, in claims
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Runs at once may share one cache: a write waits its turn (up to a minute) rather than losing a
            # reply that was paid for to "database is locked" after sqlite3's default five seconds.
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=60)
            self._conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode survives a killed process; only a power cut can lose the last commits.
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(SCHEMA)
            self._conn.execute(BATCHES)
            self._conn.execute(CLAIMS)
        except (OSError, sqlite3.Error) as exc:  # a place it cannot be made, a damaged file: before any call
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise InputError(f"--cache: {self.path}: cannot open it as the call cache ({reason})") from None

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, response: dict[str, Any]) -> None:
        """Store a reply (and end this object's claim on it, once the reply is there to be read)."""
        blob = json.dumps(response, ensure_ascii=False)
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO calls (key, response) VALUES (?, ?)", (key, blob))
            self._conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))

    def claim(self, key: str, longer: float = 0.0) -> Claim | None:
        """Claim the sending of ``key`` for this object: None once it holds the claim, else who holds it.
        ``longer``: seconds the reply may take beyond a request's tries (a batch's), dated forward (and
        ``renew``ed while its owner waits) so that no other process takes the claim as abandoned while its owner
        lives."""
        with self._lock:
            made = self._conn.execute("INSERT OR IGNORE INTO claims (key, owner, at) VALUES (?, ?, ?)",
                                      (key, self.owner, time.time() + longer))
            if made.rowcount == 1:
                return None
            row = self._conn.execute("SELECT owner, at FROM claims WHERE key = ?", (key,)).fetchone()
        if row is None:  # released between the two statements: claim again
            return self.claim(key, longer)
        return None if row[0] == self.owner else Claim(row[0], row[1])

    def renew(self, longer: float) -> int:
        """Date this object's forward-dated claims (a batch's) ``longer`` seconds from now: its owner still
        waits for their replies. Claims of requests sent alone are left as they are. Returns how many."""
        now = time.time()
        with self._lock:
            renewed = self._conn.execute("UPDATE claims SET at = ? WHERE owner = ? AND at > ?",
                                         (now + longer, self.owner, now))
        return renewed.rowcount

    def take_over(self, key: str, abandoned: Claim, longer: float = 0.0) -> bool:
        """Claim ``key`` from an abandoned claim, unless someone else took it over (or it ended) first."""
        with self._lock:
            moved = self._conn.execute("UPDATE claims SET owner = ?, at = ? WHERE key = ? AND owner = ? AND at = ?",
                                       (self.owner, time.time() + longer, key, abandoned.owner, abandoned.at))
        return moved.rowcount == 1

    def release(self, key: str) -> None:
        """End this object's claim on ``key`` without a reply (the request failed, or was never sent)."""
        with self._lock:
            self._conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))

    def batch_state(self, digest: str) -> dict[str, Any] | None:
        """What was journaled of the batch ``digest`` (its file, its id), or None if it was never started."""
        with self._lock:
            row = self._conn.execute("SELECT state FROM batches WHERE digest = ?", (digest,)).fetchone()
        return json.loads(row[0]) if row else None

    def journal_batch(self, digest: str, state: dict[str, Any]) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO batches (digest, state) VALUES (?, ?)",
                               (digest, json.dumps(state)))

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
