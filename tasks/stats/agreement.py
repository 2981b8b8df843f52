"""Agreement between annotators: Krippendorff's alpha (the ``krippendorff`` package) and rank correlations."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

Level = Literal["nominal", "ordinal", "interval", "ratio"]


def krippendorff_alpha(ratings: Mapping[str, Mapping[Any, float]], level: Level = "ordinal") -> float | None:
    """Alpha over annotators (``annotator -> unit -> value``); units one annotator did not rate are missing.

    None when it is undefined: fewer than two annotators, or no unit rated by two of them, or no variation.
    """
    import krippendorff

    annotators = sorted(ratings)
    units = sorted({u for r in ratings.values() for u in r}, key=str)
    if len(annotators) < 2 or not units:
        return None
    data = np.array([[ratings[a].get(u, np.nan) for u in units] for a in annotators], dtype=float)
    paired = np.sum(~np.isnan(data), axis=0) >= 2
    values = data[~np.isnan(data)]
    if not paired.any() or len(set(values.tolist())) < 2:
        return None
    alpha = float(krippendorff.alpha(reliability_data=data[:, paired], level_of_measurement=level))
    return None if math.isnan(alpha) else alpha


def paired_values(a: Mapping[Any, float], b: Mapping[Any, float]) -> tuple[list[float], list[float]]:
    """The values of the units both mappings rate, in one order."""
    common = sorted(set(a) & set(b), key=str)
    return [a[u] for u in common], [b[u] for u in common]


def means(ratings: Mapping[str, Mapping[Any, float]], exclude: Sequence[str] = ()) -> dict[Any, float]:
    """Per unit, the mean over annotators (leaving out ``exclude``)."""
    sums: dict[Any, list[float]] = {}
    for who, values in ratings.items():
        if who in exclude:
            continue
        for unit, v in values.items():
            sums.setdefault(unit, []).append(v)
    return {u: float(np.mean(v)) for u, v in sums.items()}
