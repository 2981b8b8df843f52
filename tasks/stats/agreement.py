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



MEASURES = ("pearson", "spearman", "kendall", "exact")


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
    denom = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (x * y).sum(axis=1) / np.where(denom > 0, denom, 1), np.nan)


def _kendall_rows(x: np.ndarray, y: np.ndarray, chunk: int = 64) -> np.ndarray:
    """Kendall's tau-b (as scipy's ``kendalltau``) of each row pair, over every pair of items."""
    i, j = np.triu_indices(x.shape[1], k=1)
    out = np.empty(x.shape[0])
    for start in range(0, x.shape[0], chunk):  # a chunk of rows at a time: n^2/2 pairs per row
        dx = np.sign(x[start:start + chunk, i] - x[start:start + chunk, j])
        dy = np.sign(y[start:start + chunk, i] - y[start:start + chunk, j])
        untied = np.sqrt((dx != 0).sum(axis=1).astype(float) * (dy != 0).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:start + chunk] = np.where(untied > 0, (dx * dy).sum(axis=1) / np.where(untied > 0, untied, 1),
                                                np.nan)
    return out


def _measures(h: np.ndarray, j: np.ndarray) -> dict[str, np.ndarray]:
    """Each measure for each row of ``h`` and ``j`` (rows: the sample and its resamples)."""
    from scipy.stats import rankdata

    return {"pearson": _pearson_rows(h, j),
            "spearman": _pearson_rows(rankdata(h, axis=1), rankdata(j, axis=1)),
            "kendall": _kendall_rows(h, j), "exact": (h == j).mean(axis=1)}


def judge_agreement(human: Sequence[float], judge: Sequence[float], resamples: int = 1000, seed: int = 0
                    ) -> dict[str, float | None]:
    """How far a judge's scores follow people's on the same items: Pearson, Spearman, Kendall's tau-b and the
    share of exact agreement, each with a 95% percentile bootstrap interval over items (``<measure>_low`` and
    ``_high``), and ``n``. Undefined (a constant side, fewer than two items): None, never a made-up value."""
    h, j = np.asarray(human, dtype=float), np.asarray(judge, dtype=float)
    if h.shape != j.shape or h.ndim != 1:
        raise ValueError("human and judge scores must pair up")
    out: dict[str, float | None] = {"n": float(len(h))}
    if len(h) == 0:
        return {**out, **{f"{m}{s}": None for m in MEASURES for s in ("", "_low", "_high")}}
    point = _measures(h[None, :], j[None, :])
    pick = np.random.default_rng(seed).integers(0, len(h), (resamples, len(h)))
    drawn = _measures(h[pick], j[pick]) if len(h) >= 2 else {m: np.array([]) for m in MEASURES}
    for m in MEASURES:
        value = float(point[m][0])
        out[m] = None if math.isnan(value) else value
        kept = drawn[m][~np.isnan(drawn[m])]
        # An interval only when (nearly) every resample defines the measure: otherwise it would describe other
        # resamples than the point does.
        ok = out[m] is not None and len(kept) >= 0.95 * resamples
        out[f"{m}_low"] = float(np.percentile(kept, 2.5)) if ok else None
        out[f"{m}_high"] = float(np.percentile(kept, 97.5)) if ok else None
    return out
