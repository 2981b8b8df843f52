"""From item-level rows to model scores with intervals, and to a leaderboard ranked by the headline metric."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from rpbench.tasks.reports.spec import GroupKey, MetricSpec, Scoring
from rpbench.tasks.stats import bootstrap_ci, cluster_bootstrap_ci, macro_mean, stratified_bootstrap_ci

ALL = "all"
Row = Mapping[str, Any]


def group_values(rows: Sequence[Row], key: GroupKey) -> list[str]:
    present = {str(r[key.column]) for r in rows}
    values = [v for v in key.order if v in present] if key.order is not None else sorted(present)
    return [*values, ALL]


def model_scores(rows: Sequence[Row], scoring: Scoring, resamples: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """Every metric for every model and every combination of group values ('all' included), with its interval.

    Combinations without items are left out; ``n`` says how many items each
    number stands on.
    """
    out = []
    models = sorted({str(r[scoring.model_column]) for r in rows})
    for model in models:
        mine = [r for r in rows if r[scoring.model_column] == model]
        values = [group_values(rows, k) for k in scoring.groups]
        for metric in scoring.metrics:
            for combo in itertools.product(*values):
                picked = [r for r in mine if r[metric.column] is not None
                          and all(v in (ALL, str(r[k.column])) for k, v in zip(scoring.groups, combo, strict=True))]
                if not picked:
                    continue
                sel = [float(r[metric.column]) for r in picked]
                point, low, high = _estimate(metric, scoring, picked, sel, resamples, seed)
                out.append({"model": model, "metric": metric.name,
                            **{k.column: v for k, v in zip(scoring.groups, combo, strict=True)},
                            "score": point, "ci_low": low, "ci_high": high, "n": len(sel)})
    return out


def point_estimate(metric: MetricSpec, picked: Sequence[Row]) -> float:
    """A metric's value over ``picked`` rows (each with a value in the metric's column), as a leaderboard gives
    it: the mean of its strata's means when it is macro-averaged, else its own aggregate."""
    sel = [float(r[metric.column]) for r in picked]
    strata = [r[metric.macro_over] for r in picked] if metric.macro_over else []
    return macro_mean(sel, strata) if len(set(strata)) > 1 else metric.point(sel)


def _estimate(metric: MetricSpec, scoring: Scoring, picked: Sequence[Row], sel: list[float], resamples: int,
              seed: int) -> tuple[float, float, float]:
    """A metric's point estimate over ``picked`` rows and its bootstrap interval."""
    strata = [r[metric.macro_over] for r in picked] if metric.macro_over else []
    if len(set(strata)) > 1:
        point = point_estimate(metric, picked)
        if not metric.interval:
            return point, point, point
        return point, *stratified_bootstrap_ci(sel, strata, point, resamples, seed)
    point = point_estimate(metric, picked)
    if not metric.interval:
        return point, point, point
    if scoring.cluster_column is not None:
        clusters = [r[scoring.cluster_column] for r in picked]
        return point, *cluster_bootstrap_ci(sel, clusters, point, metric.statistic, resamples, seed)
    return point, *bootstrap_ci(sel, point, metric.statistic, resamples, seed)


def _overall(scores: Sequence[Row], scoring: Scoring, model: str, metric: str,
             **fixed: str) -> Row | None:
    want = {k.column: fixed.get(k.column, ALL) for k in scoring.groups}
    return next((s for s in scores if s["model"] == model and s["metric"] == metric
                 and all(s[c] == v for c, v in want.items())), None)


def leaderboard(scores: Sequence[Row], scoring: Scoring, failures: Mapping[str, int],
                models: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One row per model, best first by the headline metric: each metric overall, the headline's interval and
    item count, the headline per value of every breakdown key, and the model's count of failures.

    ``models`` with no headline value at all (every item unscored: all refusals, say) are listed last with
    none, rather than dropped from the board.
    """
    head = scoring.headline
    rows = []
    for model in sorted({str(s["model"]) for s in scores} | set(models)):
        top = _overall(scores, scoring, model, head.name)
        if top is None:
            top = {"score": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": 0}
        row: dict[str, Any] = {"model": model, head.name: top["score"], "ci_low": top["ci_low"],
                               "ci_high": top["ci_high"], "n": top["n"]}
        for metric in scoring.metrics[1:]:
            found = _overall(scores, scoring, model, metric.name)
            row[metric.name] = found["score"] if found else None
        for key in scoring.groups:
            if key.breakdown:
                for value in breakdown_values(scores, key):
                    found = _overall(scores, scoring, model, head.name, **{key.column: value})
                    row[value] = found["score"] if found else None
        row["failed"] = int(failures.get(model, 0))
        rows.append(row)
    sign = -1.0 if head.higher_is_better else 1.0
    return sorted(rows, key=lambda r: sign * r[head.name] if not math.isnan(r[head.name]) else math.inf)


def breakdown_values(scores: Sequence[Row], key: GroupKey) -> list[str]:
    """A breakdown key's leaderboard columns: every declared value (so the table's columns stay put from run to
    run), else those present."""
    if key.order is not None:
        return list(key.order)
    return sorted({str(s[key.column]) for s in scores if s[key.column] != ALL})


def shown_breakdown_values(scores: Sequence[Row], key: GroupKey) -> list[str]:
    """The breakdown values a report shows: those with scores in this run, in the declared order. A run of two
    of CharacterBench's thirteen dimensions is not a table (nor a chart caption) of eleven empty columns."""
    present = {str(s[key.column]) for s in scores}
    return [v for v in breakdown_values(scores, key) if v in present]
