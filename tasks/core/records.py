"""The records every benchmark mode shares: a table row's base, failures, and the accounting of LLM calls.

These are the shapes that travel between stages and live in tables (storage
derives each table's Arrow schema from its record). They validate themselves,
so a bad record is refused where it enters, with the field that is wrong.
A mode's own records (FURINA's characters, scenes and items, say) live with that mode.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

LANGUAGES = ("en", "zh")


class Record(BaseModel):
    """A row of a table: unknown fields are an error, never silently dropped."""

    model_config = ConfigDict(extra="forbid")


Status = Literal["ok", "failed"]


class Failure(Record):
    """Work that produced no usable result: counted and reported, never replaced by a default."""

    stage: str
    model: str
    item_id: str
    kind: str
    error: str | None = None
    # True for a side step that failed on an item that was still scored (a hallucination check): it is
    # reported by kind, but the item is not one of the model's failed items.
    scored: bool = False


def failures_of(stage: str, kind: str, records: Iterable[Any]) -> list[Failure]:
    """A failure for each record of a stage (with its ``model``, ``item_id`` and ``error``) whose ``status`` is
    not ok."""
    return [Failure(stage=stage, model=r.model, item_id=r.item_id, kind=kind, error=r.error)
            for r in records if r.status != "ok"]


def failed_pairs(failures: Sequence[Failure]) -> set[tuple[str, str]]:
    """(model, item) of each failed item: counted once however many of its steps failed, and not an item
    scored despite a failed side step."""
    return {(f.model, f.item_id) for f in failures if not f.scored}


class CallRecord(Record):
    """Accounting of one LLM request: who asked, which model, tokens, latency, cost, outcome."""

    call_id: str
    cache_key: str
    role: str
    model: str
    tag: str | None
    attempt: int
    cached: bool
    # "interrupted": sent, and the run was stopped before the reply came (its tokens and cost are unknown).
    outcome: Literal["ok", "parse_error", "failed", "interrupted"]
    error: str | None = None
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    # Of the prompt tokens, those the provider read from its prompt cache (billed at its cached price).
    cached_prompt_tokens: int | None = None
    latency_s: float = 0.0
    cost_usd: float | None = None
    transient_retries: int = 0
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class JudgeAgreement(Record):
    """How far one judge's scores follow people's on one group of items (a benchmark's dimension in one
    language, say): correlations and exact agreement with 95% bootstrap intervals (tasks.stats.agreement)."""

    benchmark: str
    judge: str
    group: str
    language: str
    n: int
    pearson: float | None
    pearson_low: float | None
    pearson_high: float | None
    spearman: float | None
    spearman_low: float | None
    spearman_high: float | None
    kendall: float | None
    kendall_low: float | None
    kendall_high: float | None
    exact: float | None
    exact_low: float | None
    exact_high: float | None
