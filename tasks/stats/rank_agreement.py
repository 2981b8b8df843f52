"""Do two benchmarks rank the same models the same way? Kendall's tau between their rankings, with an
interval from resampling each benchmark's items, and a model's standing among the models run (percentile).

A benchmark here is its item-level rows and one statistic of them per model (its headline); its items are
resampled whole and paired across models (one draw of items serves every model), because the models answered
the same items.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from rpbench.tasks.core.records import Record

Row = Mapping[str, Any]
MIN_MODELS = 3  # below three models a ranking has one or no pair to disagree on: tau says nothing


@dataclass(frozen=True)
class RankedBenchmark:
    """A benchmark's rows and how a model's headline is computed from any multiset of them."""

    name: str
    rows: Sequence[Row]
    model_column: str
    unit_column: str | None  # the rows of one unit (item, or dialogue of items) are resampled together
    headline: Callable[[Sequence[Row]], float]  # a model's headline from its rows
    higher_is_better: bool = True

    def scores(self, counts: Mapping[Any, int] | None = None) -> dict[str, float]:
        """Each model's headline over its rows, each unit taken ``counts[unit]`` times (all once: None)."""
        by_model: dict[str, list[Row]] = {}
        for r in self.rows:
            times = 1 if counts is None else counts.get(r[self.unit_column], 0) if self.unit_column else 1
            by_model.setdefault(str(r[self.model_column]), []).extend([r] * times)
        return {m: self.headline(rows) for m, rows in sorted(by_model.items()) if rows}


def percentiles(scores: Mapping[str, float], higher_is_better: bool = True) -> dict[str, float | None]:
    """Each model's percentile rank among ``scores`` (0-100, ties share the mean rank: scipy's "mean" kind);
    None for every model when fewer than two have a score (a standing needs another model to stand against)."""
    known = {m: v for m, v in scores.items() if v is not None and not math.isnan(v)}
    if len(known) < 2:
        return {m: None for m in scores}
    sign = 1.0 if higher_is_better else -1.0
    values = [sign * v for v in known.values()]
    return {m: (float(stats.percentileofscore(values, sign * known[m], kind="mean")) if m in known else None)
            for m in scores}


def kendall_tau(a: Mapping[str, float], b: Mapping[str, float]) -> tuple[float | None, int]:
    """Kendall's tau-b between two benchmarks' scores over the models both scored, and how many those are;
    None with fewer than MIN_MODELS models or when either ranking is all ties."""
    common = sorted(m for m in set(a) & set(b) if not math.isnan(a[m]) and not math.isnan(b[m]))
    if len(common) < MIN_MODELS:
        return None, len(common)
    tau = stats.kendalltau([a[m] for m in common], [b[m] for m in common]).statistic
    return (None if math.isnan(tau) else float(tau)), len(common)


class PairAgreement(Record):
    """Kendall's tau between two benchmarks' rankings (a row of a suite's agreement table)."""

    first: str
    second: str
    models: int
    tau: float | None
    ci_low: float | None
    ci_high: float | None
    resamples: int  # resamples in which tau was defined (a resample can leave a ranking all ties)


def _resample_counts(units: Sequence[Any], rng: np.random.Generator) -> dict[Any, int]:
    drawn = np.bincount(rng.integers(0, len(units), size=len(units)), minlength=len(units))
    return {u: int(c) for u, c in zip(units, drawn, strict=True) if c}


def rank_agreement(benchmarks: Sequence[RankedBenchmark], resamples: int = 1000, seed: int = 0,
                   level: float = 0.95) -> list[PairAgreement]:
    """Kendall's tau between every pair of benchmarks, with a percentile interval from resampling each
    benchmark's units (independently per benchmark, paired across its models). A benchmark without a unit
    column contributes its point ranking only (no interval for its pairs)."""
    direction = {b.name: (1.0 if b.higher_is_better else -1.0) for b in benchmarks}

    def oriented(name: str, scores: Mapping[str, float]) -> dict[str, float]:
        return {m: direction[name] * v for m, v in scores.items()}  # higher is better, whatever the metric

    points = {b.name: oriented(b.name, b.scores()) for b in benchmarks}
    rng = np.random.default_rng(seed)
    units = {b.name: sorted({r[b.unit_column] for r in b.rows}, key=str) if b.unit_column else [] for b in benchmarks}
    drawn: dict[str, list[dict[str, float]]] = {b.name: [] for b in benchmarks}
    for _ in range(resamples):
        for b in benchmarks:
            if units[b.name]:
                drawn[b.name].append(oriented(b.name, b.scores(_resample_counts(units[b.name], rng))))
    out = []
    for first, second in itertools.combinations([b.name for b in benchmarks], 2):
        tau, n = kendall_tau(points[first], points[second])
        low = high = None
        used = 0
        if tau is not None and drawn[first] and drawn[second]:
            taus = [t for x, y in zip(drawn[first], drawn[second], strict=True)
                    if (t := kendall_tau(x, y)[0]) is not None]
            used = len(taus)
            if taus:
                low, high = (float(q) for q in np.quantile(taus, [(1 - level) / 2, (1 + level) / 2]))
        out.append(PairAgreement(first=first, second=second, models=n, tau=tau, ci_low=low, ci_high=high,
                                 resamples=used))
    return out


def most_disagreeing(pairs: Sequence[PairAgreement]) -> tuple[str, float] | None:
    """The benchmark whose rankings agree least with the others (lowest mean tau over its defined pairs), and
    that mean; None when no pair has a tau, or when every benchmark agrees with the others equally."""
    taus: dict[str, list[float]] = {}
    for p in pairs:
        if p.tau is not None:
            taus.setdefault(p.first, []).append(p.tau)
            taus.setdefault(p.second, []).append(p.tau)
    means = {b: float(np.mean(t)) for b, t in sorted(taus.items())}
    if not means or min(means.values()) == max(means.values()):
        return None
    name = min(means, key=lambda b: means[b])
    return name, means[name]
