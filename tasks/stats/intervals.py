"""Bootstrap confidence intervals (scipy.stats.bootstrap), seeded so the same data gives the same interval.

An interval needs at least two independent units (values, clusters, or a stratum of two values): from one,
every resample is that same unit, and a zero-width interval would claim a certainty one observation cannot
give. Those intervals are undefined (nan both ends), which every report shows as a dash. Two or more values
that are all equal do have zero spread, and keep the point as both ends."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

# statistic(sample, axis) -> value(s), vectorised the way scipy's bootstrap calls it.
Statistic = Callable[[np.ndarray, int], np.ndarray]


UNDEFINED = (math.nan, math.nan)


def mean_statistic(sample: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(sample, axis=axis)


def bootstrap_ci(values: Sequence[float], point: float, statistic: Statistic = mean_statistic,
                 resamples: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic``; a sample with no spread has the point estimate as both ends,
    a single value none (nan, nan)."""
    data = np.asarray(values, dtype=float)
    if len(data) < 2:
        return UNDEFINED
    if np.all(data == data[0]):
        return point, point
    from scipy import stats  # imported on first use: the command line should start fast

    res = stats.bootstrap((data,), statistic, n_resamples=resamples, confidence_level=level, method="percentile",
                          random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def cluster_bootstrap_ci(values: Sequence[float], clusters: Sequence[object], point: float,
                         statistic: Statistic = mean_statistic, resamples: int = 1000, seed: int = 0,
                         level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval that resamples whole clusters (say, the items of one dialogue) instead of
    single values: values within a cluster are correlated, and treating them as independent understates the
    uncertainty. With one value per cluster it is the ordinary bootstrap."""
    data = np.asarray(values, dtype=float)
    groups: dict[object, list[int]] = {}
    for i, c in enumerate(clusters):
        groups.setdefault(c, []).append(i)
    members = [np.asarray(ix) for ix in groups.values()]
    if len(members) < 2:
        return UNDEFINED  # one cluster: there is nothing to resample between
    if np.all(data == data[0]):
        return point, point
    from scipy import stats

    def resampled(picked: np.ndarray) -> float:
        rows = np.concatenate([members[int(k)] for k in picked])
        return float(statistic(data[rows], -1))

    res = stats.bootstrap((np.arange(len(members)),), resampled, n_resamples=resamples, vectorized=False,
                          confidence_level=level, method="percentile", random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def macro_mean(values: Sequence[float], strata: Sequence[object]) -> float:
    """The unweighted mean of the strata's means (each stratum counts once, however many values it holds)."""
    groups: dict[object, list[float]] = {}
    for v, s in zip(values, strata, strict=True):
        groups.setdefault(s, []).append(float(v))
    return float(np.mean([np.mean(g) for g in groups.values()]))


def stratified_bootstrap_ci(values: Sequence[float], strata: Sequence[object], point: float, resamples: int = 1000,
                            seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of ``macro_mean``: each stratum is resampled within itself (so every
    resample keeps every stratum and its size), then the strata's means are averaged."""
    groups: dict[object, list[float]] = {}
    for v, s in zip(values, strata, strict=True):
        groups.setdefault(s, []).append(float(v))
    data = [np.asarray(g) for g in groups.values()]
    if all(len(g) < 2 for g in data):
        return UNDEFINED  # every stratum a single value: no resample differs from the data
    if all(np.all(g == g[0]) for g in data):
        return point, point
    rng = np.random.default_rng(seed)
    means = np.mean([g[rng.integers(0, len(g), size=(resamples, len(g)))].mean(axis=1) for g in data], axis=0)
    tail = (1.0 - level) / 2 * 100
    return float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))
