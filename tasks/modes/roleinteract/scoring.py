"""RoleInteract's scores, as pure functions (each in [0, 1]; tables show them x100).

Two rules for choice items, ``paper`` (the default) and ``released``, which differ on one kind of reply:
- ``paper`` (Appendix C, for every choice item): partial credit, the share of the gold options chosen, and 0
  as soon as any chosen option is not gold ({A, B} gold: A -> 1/2, A+B -> 1, A+C -> 0). A single-gold item is
  right only when exactly its option is chosen: A+C with gold A is 0.
- ``released`` (SocialBench's released ``dataset.py``): a single-gold item is right when the *first* option
  the reply chooses is gold (A+C with gold A is 1); several gold options score as in the paper.
- Memory items: keyword coverage, the share of the gold keywords the reply mentions (case-insensitive
  substring, as the released evaluation matches them).
- The table's Avg is the unweighted mean of its nine columns, each column the mean over its items; it is
  undefined when a column has no scored item (data covering fewer columns gets the mean of those it has,
  named as such, never called Avg).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Literal


def single(chosen: Sequence[str], gold: Sequence[str]) -> float:
    return 1.0 if chosen and chosen[0] == gold[0] else 0.0


def multiple(chosen: Sequence[str], gold: Sequence[str]) -> float:
    picked, right = set(chosen), set(gold)
    if not picked or picked - right:
        return 0.0
    return len(picked & right) / len(right)


Rule = Literal["paper", "released"]


def choice_score(chosen: Sequence[str], gold: Sequence[str], rule: Rule = "paper") -> float:
    """``multiple`` for every item under ``paper``; under ``released``, ``single`` for an item with one gold
    option (even in a multi-answer column)."""
    if rule == "released" and len(gold) == 1:
        return single(chosen, gold)
    return multiple(chosen, gold)


def cover(reply: str, keywords: Sequence[str]) -> float:
    text = reply.lower()
    return sum(k.lower() in text for k in keywords) / len(keywords)


def table_average(columns: Mapping[str, float | None]) -> float | None:
    """Avg as the paper's Table 2: the unweighted mean of all nine columns; None when any has no score."""
    values = list(columns.values())
    return statistics.fmean(values) if len(values) == 9 and all(v is not None for v in values) else None  # type: ignore[arg-type]


def covered_average(columns: Mapping[str, float | None]) -> float | None:
    """The unweighted mean of the columns that have a score (None if none has): Avg when all nine do."""
    values = [v for v in columns.values() if v is not None]
    return statistics.fmean(values) if values else None
