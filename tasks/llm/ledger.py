"""Accounting of every call: who asked, which model, tokens, latency, cost, outcome."""

from __future__ import annotations

import itertools
import os
import threading
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rpbench.storage.schemas import CALLS
from rpbench.storage.tables import read_rows, write_table


_PROCESS_TAG = f"{os.getpid():x}-{os.urandom(4).hex()}"
_counter = itertools.count()


def _next_call_id() -> str:
    """Unique per call across processes and runs, without a uuid4 on the hot path."""
    return f"{_PROCESS_TAG}-{next(_counter)}"


@dataclass
class CallRecord:
    cache_key: str
    role: str
    model: str
    tag: str | None
    attempt: int
    cached: bool
    outcome: str  # ok | parse_error | failed
    error: str | None = None
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    latency_s: float = 0.0
    cost_usd: float | None = None
    transient_retries: int = 0
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    call_id: str = field(default_factory=lambda: _next_call_id())


class Ledger:
    """Collects call records in memory; ``flush`` merges them into a run's ``calls`` table."""

    def __init__(self) -> None:
        self._records: list[CallRecord] = []
        self._lock = threading.Lock()

    def add(self, record: CallRecord) -> None:
        with self._lock:
            self._records.append(record)

    def records(self) -> list[CallRecord]:
        with self._lock:
            return list(self._records)

    def totals(self) -> dict[str, Any]:
        return summarize_calls([asdict(r) for r in self.records()])

    def flush(self, path: str | Path) -> Path:
        """Append this ledger's records to the calls table at ``path`` (written atomically)."""
        path = Path(path)
        with self._lock:
            new, self._records = self._records, []
        old = read_rows(path, CALLS) if path.is_file() else []
        return write_table(path, old + [asdict(r) for r in new], CALLS)


def summarize_calls(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over call rows (as in the ``calls`` table): counts, tokens and cost of what was really sent."""
    fresh = [c for c in calls if not c["cached"]]
    costs = [c["cost_usd"] for c in fresh if c["cost_usd"] is not None]
    return {
        "calls": len(calls),
        "calls_sent": len(fresh),
        "calls_cached": len(calls) - len(fresh),
        "parse_errors": sum(c["outcome"] == "parse_error" for c in calls),
        "failed": sum(c["outcome"] == "failed" for c in calls),
        "transient_retries": sum(c["transient_retries"] or 0 for c in fresh),
        "prompt_tokens": sum(c["prompt_tokens"] or 0 for c in fresh),
        "completion_tokens": sum(c["completion_tokens"] or 0 for c in fresh),
        "cost_usd": round(sum(costs), 6),
        "cost_unknown_calls": sum(c["cost_usd"] is None for c in fresh),
        "models": sorted({c["model"] for c in calls}),
    }
