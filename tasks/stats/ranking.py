"""Comparing models: how well scores separate them, and how a judge correlates with people."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def separability_index(scores: Sequence[float]) -> float:
    """SI = std(s) / (max(s) - min(s)); undefined (nan) with fewer than two distinct scores."""
    values = np.asarray(scores, dtype=float)
    spread = values.max() - values.min() if len(values) else 0.0
    return float(values.std() / spread) if spread > 0 else math.nan


def pearson(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    from scipy import stats

    res = stats.pearsonr(x, y)
    return float(res.statistic), float(res.pvalue)


def spearman(x: Sequence[float], y: Sequence[float]) -> tuple[float | None, float | None]:
    """Spearman's rank correlation and its p-value; None for both when it is undefined (fewer than three
    pairs, or one side constant)."""
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None, None
    from scipy import stats

    res = stats.spearmanr(x, y)
    return float(res.statistic), float(res.pvalue)
