"""RoleInteract's scores, as pure functions (each in [0, 1]; tables show them x100).

- Single-answer items: 1 when the first option the reply chooses is the gold one.
- Multi-answer items (several gold options): partial credit, the share of the gold options chosen, and 0 as
  soon as any chosen option is not gold ({A, B} gold: A -> 1/2, A+B -> 1, A+C -> 0).
- Memory items: keyword coverage, the share of the gold keywords the reply mentions (case-insensitive
  substring, as the released evaluation matches them).
- The table's Avg is the unweighted mean of its nine columns, each column the mean over its items.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence


def single(chosen: Sequence[str], gold: Sequence[str]) -> float:
    return 1.0 if chosen and chosen[0] == gold[0] else 0.0


def multiple(chosen: Sequence[str], gold: Sequence[str]) -> float:
    picked, right = set(chosen), set(gold)
    if not picked or picked - right:
        return 0.0
    return len(picked & right) / len(right)


def choice_score(chosen: Sequence[str], gold: Sequence[str]) -> float:
    """An item with one gold option scores by ``single`` (even in a multi-answer column), else ``multiple``."""
    return single(chosen, gold) if len(gold) == 1 else multiple(chosen, gold)


def cover(reply: str, keywords: Sequence[str]) -> float:
    text = reply.lower()
    return sum(k.lower() in text for k in keywords) / len(keywords)


def table_average(columns: Mapping[str, float | None]) -> float | None:
    """Avg: the unweighted mean of the columns that have a score (None if none has)."""
    values = [v for v in columns.values() if v is not None]
    return statistics.fmean(values) if values else None
