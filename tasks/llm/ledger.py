"""Accounting of every call: who asked, which model, tokens, latency, cost, outcome."""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rpbench.storage.schemas import CALLS
from rpbench.storage.tables import write_records
from rpbench.tasks.core.records import CallRecord

_PROCESS_TAG = f"{os.getpid():x}-{os.urandom(4).hex()}"
INTERRUPTED = "interrupted: the run was stopped while this request was in flight; its tokens and cost are unknown"
_counter = itertools.count()


def next_call_id() -> str:
    """Unique per call across processes and runs, without a uuid4 on the hot path."""
    return f"{_PROCESS_TAG}-{next(_counter)}"


class Ledger:
    """Collects the call records of one stage (or one script), in the order they finished.

    Each record is kept as its JSON line (a third of the memory of the record object; at 100,000 calls the
    objects were a good part of a stage's memory) and read back when asked for. With a ``journal`` file,
    each record is also appended to it the moment it is added (one line, one ``write``), so the calls of a
    run killed midway (their tokens and cost) are still on disk when the run is started again;
    ``read_journal`` brings them back.
    """

    def __init__(self, journal: str | Path | None = None) -> None:
        self._lines: list[bytes] = []
        self._lock = threading.Lock()
        self.in_flight = 0  # calls begun and not yet answered (progress lines show it)
        self.unanswered = 0  # calls that ended with no usable reply (a rerun retries the stage that made them)
        self.journal = Path(journal) if journal is not None else None
        self._fd: int | None = None  # the journal, opened on its first line and kept open (closed with the ledger)
        if self.journal is not None:
            self.journal.parent.mkdir(parents=True, exist_ok=True)

    def add(self, record: CallRecord) -> None:
        line = record.model_dump_json().encode("utf-8")
        with self._lock:
            self._lines.append(line)
            self._journal(line)

    def sending(self, record: CallRecord) -> None:
        """Note in the journal that ``record``'s request is going out now. If the run is killed before the
        reply, a resumed run still counts it as sent (its tokens and cost unknown, never taken as free);
        when it finishes, ``add`` journals the final record, which replaces this one."""
        if self.journal is None:
            return
        line = record.model_copy(update={
            "outcome": "interrupted", "cached": False, "prompt_tokens": None, "completion_tokens": None,
            "cost_usd": None, "error": INTERRUPTED}).model_dump_json().encode("utf-8")
        with self._lock:
            self._journal(line)

    def _journal(self, line: bytes) -> None:
        if self.journal is None:
            return
        if self._fd is None:
            # Opened once, not per line (two system calls fewer per call); closed when the ledger goes.
            self._fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            weakref.finalize(self, os.close, self._fd)
        # O_APPEND and a single write: a kill leaves whole lines behind, never half of one.
        os.write(self._fd, line + b"\n")

    def begin(self) -> None:
        with self._lock:
            self.in_flight += 1

    def end(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def count(self) -> int:
        """Records so far (a method, not ``len``: an empty ledger is still a ledger, never falsy)."""
        return len(self._lines)

    def iter_records(self) -> Iterator[CallRecord]:
        """The records so far, each read back as it is reached (a stage's calls table is written from this)."""
        with self._lock:
            lines = list(self._lines)
        return (CallRecord.model_validate_json(line) for line in lines)

    def records(self) -> list[CallRecord]:
        return list(self.iter_records())

    def totals(self) -> dict[str, Any]:
        return summarize_calls(self.records())

    def write(self, path: str | Path) -> Path:
        """Write every record as a ``calls`` table at ``path`` (atomically; the stage's own table)."""
        return write_records(path, self.iter_records(), CALLS)


def read_journal(path: str | Path) -> list[CallRecord]:
    """The call records a killed run left in its journal (a torn last line, if any, is not a record): the last
    line of each call, so a request that was in flight at the kill is there as ``interrupted``."""
    path = Path(path)
    if not path.is_file():
        return []
    out: dict[str, CallRecord] = {}
    for line in path.read_bytes().splitlines():
        try:
            record = CallRecord.model_validate_json(line)
        except ValueError:
            continue
        out.pop(record.call_id, None)  # keep the order in which calls finished
        out[record.call_id] = record
    return list(out.values())


def summarize_calls(calls: Sequence[CallRecord]) -> dict[str, Any]:
    """Totals over call records: counts, tokens and cost of what was really sent."""
    fresh = [c for c in calls if not c.cached]
    costs = [c.cost_usd for c in fresh if c.cost_usd is not None]
    return {
        "calls": len(calls),
        "calls_sent": len(fresh),
        "calls_cached": len(calls) - len(fresh),
        "parse_errors": sum(c.outcome == "parse_error" for c in calls),
        "failed": sum(c.outcome == "failed" for c in calls),
        "interrupted": sum(c.outcome == "interrupted" for c in calls),
        "transient_retries": sum(c.transient_retries for c in fresh),
        "prompt_tokens": sum(c.prompt_tokens or 0 for c in fresh),
        "completion_tokens": sum(c.completion_tokens or 0 for c in fresh),
        "cached_prompt_tokens": sum(c.cached_prompt_tokens or 0 for c in fresh),
        "cost_usd": round(sum(costs), 6),
        "cost_unknown_calls": sum(c.cost_usd is None for c in fresh),
        "models": sorted({c.model for c in calls}),
    }
