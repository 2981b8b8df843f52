"""DMT-Score (the paper's section on scoring), as pure functions.

I[t] is 1 when round t is good on a metric. Over the first tau rounds a strict
metric scores 1 only while every round so far is good (one bad reply and the
user is gone), a lenient one (knowledge exposure, interactivity) scores 1 once
any round so far is good. Score_{tau,m} averages over dialogues, Score_m over
tau = 1..T, and Score_tau over metrics (the round curve). Reported x100.

A dialogue can end before T (its purpose served, or a failed call). What its
missing rounds count as is a stated policy:
- ``carry`` (default): its score at its last round carries forward; a dialogue that
  finished early is not punished for it;
- ``exclude``: it leaves the average at every tau past its end;
- ``bad``: the missing rounds count as bad rounds.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Literal

Policy = Literal["carry", "exclude", "bad"]
POLICIES = ("carry", "exclude", "bad")


def prefix_scores(labels: Sequence[int], max_rounds: int, lenient: bool,
                  policy: Policy = "carry") -> list[float | None]:
    """score_{n,tau,m} for tau = 1..max_rounds from one dialogue's round labels (1 good, 0 bad)."""
    out: list[float | None] = []
    have = len(labels)
    for tau in range(1, max_rounds + 1):
        if tau <= have:
            window = labels[:tau]
        elif policy == "exclude":
            out.append(None)
            continue
        elif policy == "bad":
            window = [*labels, *([0] * (tau - have))]
        else:
            window = labels[:have]
        if not window:
            out.append(None if policy == "exclude" else 0.0)
            continue
        out.append(float(max(window) if lenient else min(window)))
    return out


def dialogue_score(prefix: Sequence[float | None]) -> float | None:
    """One dialogue's average over tau (x100), over the taus it counts at."""
    values = [v for v in prefix if v is not None]
    return 100.0 * statistics.fmean(values) if values else None


def score_by_tau(prefixes: Sequence[Sequence[float | None]]) -> list[float | None]:
    """Score_{tau,m} (x100): per tau, the mean over the dialogues counted at that tau."""
    if not prefixes:
        return []
    out = []
    for tau in range(len(prefixes[0])):
        values = [p[tau] for p in prefixes if p[tau] is not None]
        out.append(100.0 * statistics.fmean(values) if values else None)  # type: ignore[arg-type]
    return out


def metric_score(by_tau: Sequence[float | None]) -> float | None:
    """Score_m = (1/T) sum over tau of Score_{tau,m} (over the taus with any dialogue)."""
    values = [v for v in by_tau if v is not None]
    return statistics.fmean(values) if values else None


def round_curve(by_metric: Mapping[str, Sequence[float | None]]) -> list[float | None]:
    """Score_tau = the mean over metrics of Score_{tau,m}."""
    if not by_metric:
        return []
    T = max(len(v) for v in by_metric.values())
    out = []
    for tau in range(T):
        values = [v[tau] for v in by_metric.values() if tau < len(v) and v[tau] is not None]
        out.append(statistics.fmean(values) if values else None)  # type: ignore[arg-type]
    return out
