"""A model's profile across benchmarks: each benchmark's headline with its interval and the model's percentile
among the models run, each benchmark's sub-scores, and how far the benchmarks' rankings agree.

Scores of different benchmarks are on different scales (a share of correct choices, a 1-5 judge mean, a
Rouge-L); nothing here adds them up. A percentile only says where a model stands among the models of this
suite. Weights, when a suite file gives them, combine percentiles (never raw scores) and are named as such.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.core.records import Record
from rpbench.tasks.reports.render import leaderboard_columns
from rpbench.tasks.reports.scores import point_estimate
from rpbench.tasks.reports.spec import ReportSpec
from rpbench.tasks.stats.rank_agreement import (
    MIN_MODELS,
    PairAgreement,
    RankedBenchmark,
    most_disagreeing,
    percentiles,
    rank_agreement,
)

Row = Mapping[str, Any]


@dataclass(frozen=True)
class BenchmarkResult:
    """What a suite gathered from one benchmark's run folder."""

    mode: str
    spec: ReportSpec
    status: str  # the run's outcome: ok, failed
    board: Sequence[Row]  # its leaderboard
    scores: Sequence[Row]  # its model scores (every metric and group)
    rows: Sequence[Row]  # its item-level rows


class ProfileRow(Record):
    model: str
    benchmark: str
    metric: str
    unit: str
    score: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    failed: int
    percentile: float | None  # 0-100 among this suite's models on this benchmark; None with one model


class SubScore(Record):
    model: str
    benchmark: str
    column: str  # as the benchmark's leaderboard heads it (unit included)
    value: float | None
    digits: int  # as the benchmark's report shows it (BLEU's 0.0253 is not 0.0)


class Combined(Record):
    """A weighted mean of a model's percentiles, only when a suite file gives weights."""

    model: str
    weighted_percentile: float | None
    weights: dict[str, float]


PROFILE = TableSpec("profile", 1, ProfileRow)
SUBSCORES = TableSpec("subscores", 2, SubScore)
AGREEMENT = TableSpec("agreement", 1, PairAgreement)
COMBINED = TableSpec("combined", 1, Combined)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def profile_rows(results: Sequence[BenchmarkResult]) -> list[ProfileRow]:
    out = []
    for b in results:
        head = b.spec.scoring.headline
        headline = {str(r["model"]): _number(r.get(head.name)) for r in b.board}
        standing = percentiles({m: math.nan if v is None else v for m, v in headline.items()}, head.higher_is_better)
        out += [ProfileRow(model=str(r["model"]), benchmark=b.mode, metric=head.name, unit=head.unit,
                           score=_number(r.get(head.name)), ci_low=_number(r.get("ci_low")),
                           ci_high=_number(r.get("ci_high")), n=int(r.get("n") or 0), failed=int(r.get("failed") or 0),
                           percentile=standing[str(r["model"])]) for r in b.board]
    return sorted(out, key=lambda p: (p.model, p.benchmark))


def subscore_rows(results: Sequence[BenchmarkResult]) -> list[SubScore]:
    """Every leaderboard column of each benchmark but its headline and failure count: its breakdowns
    (dimensions, criteria, columns, reference sets) and its other metrics, in the benchmark's own units."""
    out = []
    for b in results:
        columns = leaderboard_columns(b.spec.scoring, b.scores)[1:-1]
        for r in b.board:
            out += [SubScore(model=str(r["model"]), benchmark=b.mode, column=c.heading,
                             value=_number(c.shown(r.get(c.key))), digits=c.digits) for c in columns]
    return out


def ranked(b: BenchmarkResult) -> RankedBenchmark:
    """A benchmark as rank agreement resamples it: its units are its clusters (the items of one dialogue move
    together) or else its items."""
    scoring = b.spec.scoring
    head = scoring.headline
    rows = [r for r in b.rows if r.get(head.column) is not None]

    def headline(picked: Sequence[Row]) -> float:
        return point_estimate(head, picked) if picked else math.nan

    return RankedBenchmark(b.mode, rows, scoring.model_column, scoring.cluster_column or scoring.item_column,
                           headline, head.higher_is_better)


@dataclass(frozen=True)
class AgreementResult:
    pairs: list[PairAgreement]
    # Why there is no table, or which benchmark agrees least with the others.
    note: str
    least: tuple[str, float] | None


def agreement(results: Sequence[BenchmarkResult], resamples: int, seed: int) -> AgreementResult:
    models = {str(r["model"]) for b in results for r in b.board}
    if len(results) < 2:
        return AgreementResult([], f"Agreement needs two benchmarks or more; this suite scored {len(results)}.", None)
    if len(models) < MIN_MODELS:
        return AgreementResult([], f"Agreement between rankings needs at least {MIN_MODELS} models (with two, a "
                                   f"ranking is one comparison, and tau is +1 or -1 by chance as much as by "
                                   f"design); this suite ran {len(models)}.", None)
    unmatched = [b.mode for b in results if b.spec.scoring.item_column is None]
    pairs = rank_agreement([ranked(b) for b in results], resamples, seed)
    least = most_disagreeing(pairs)
    note = (f"Intervals resample each benchmark's items {resamples} times (the items of one dialogue together)."
            + (f" Without an item key, {', '.join(unmatched)} has no interval." if unmatched else ""))
    return AgreementResult(pairs, note, least)


def combined(profile: Sequence[ProfileRow], weights: Mapping[str, float]) -> list[Combined]:
    """Each model's weighted mean percentile over the weighted benchmarks; None when it lacks one of them."""
    out = []
    for model in sorted({p.model for p in profile}):
        mine = {p.benchmark: p.percentile for p in profile if p.model == model}
        parts = [(w, mine.get(name)) for name, w in weights.items()]
        value = (sum(w * v for w, v in parts if v is not None) / sum(w for w, _ in parts)
                 if parts and all(v is not None for _, v in parts) and sum(w for w, _ in parts) > 0 else None)
        out.append(Combined(model=model, weighted_percentile=value, weights=dict(weights)))
    return out
