"""Bootstrap confidence intervals (scipy.stats.bootstrap), seeded so the same data gives the same interval."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

# statistic(sample, axis) -> value(s), vectorised the way scipy's bootstrap calls it.
Statistic = Callable[[np.ndarray, int], np.ndarray]


def mean_statistic(sample: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(sample, axis=axis)


def bootstrap_ci(values: Sequence[float], point: float, statistic: Statistic = mean_statistic,
                 resamples: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic``; a sample with no spread has the point estimate as both ends."""
    data = np.asarray(values, dtype=float)
    if len(data) < 2 or np.all(data == data[0]):
        return point, point
    from scipy import stats  # imported on first use: the command line should start fast

    res = stats.bootstrap((data,), statistic, n_resamples=resamples, confidence_level=level, method="percentile",
                          random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)
