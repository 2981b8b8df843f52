"""Elo ratings fitted by Bradley-Terry maximum likelihood over pairwise battles, with dialogue-clustered
bootstrap intervals (scipy).

A battle is (model in slot A, model in slot B, A's share of the win: 1, 0, or 0.5 for a tie). The model says
P(A beats B) = 1 / (1 + base ** ((R_B - R_A) / scale)); the ratings maximise the binomial likelihood of the
observed shares, a tie counting as half a win each way (as Chatbot Arena's and RPBench-Auto's fits duplicate
every battle and turn a tie into one win for each side). The fit is only defined up to a shift; the ratings are
centred on ``init`` (their mean is ``init``), which is where a logistic regression without intercept started
from zero ends, as those fits are made. A model that wins or loses every battle has no finite maximum: its
rating goes as far as the optimiser's tolerance lets it, as it does in theirs.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

SCALE, BASE, INIT = 400.0, 10.0, 1000.0


@dataclass(frozen=True)
class Battle:
    """One pairwise judgment as the fit takes it."""

    a: str
    b: str
    share_a: float  # 1: A won, 0: B won, 0.5: a tie
    cluster: Hashable = None  # battles of one dialogue are resampled together


def _design(battles: Sequence[Battle], models: list[str], base: float) -> tuple[np.ndarray, np.ndarray]:
    index = {m: i for i, m in enumerate(models)}
    x = np.zeros((len(battles), len(models)))
    rows = np.arange(len(battles))
    x[rows, [index[b.a] for b in battles]] = math.log(base)
    x[rows, [index[b.b] for b in battles]] = -math.log(base)
    return x, np.array([b.share_a for b in battles], dtype=float)


def _coefficients(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The unpenalised logistic fit of shares ``y`` on ``x`` (no intercept), by L-BFGS from zero: every gradient
    sums to zero over the models (each row is +c and -c), so the fit stays centred."""
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    def loss(beta: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ beta
        nll = -float(np.sum(y * log_expit(z) + (1 - y) * log_expit(-z)))
        return nll, x.T @ (expit(z) - y)

    found = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B",
                     options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000})
    beta = np.asarray(found.x)
    return beta - beta.mean()


def fit_elo(battles: Sequence[Battle], scale: float = SCALE, base: float = BASE, init: float = INIT
            ) -> dict[str, float]:
    """Each model's Elo rating from ``battles`` (models in no battle have none)."""
    if not battles:
        return {}
    models = sorted({b.a for b in battles} | {b.b for b in battles})
    x, y = _design(battles, models, base)
    beta = _coefficients(x, y)
    return {m: init + scale * float(beta[i]) for i, m in enumerate(models)}


def elo_intervals(battles: Sequence[Battle], resamples: int = 1000, seed: int = 0, level: float = 0.95,
                  scale: float = SCALE, base: float = BASE, init: float = INIT
                  ) -> dict[str, tuple[float, float]]:
    """Percentile intervals of each model's rating over ``resamples`` refits, each on the battles of dialogues
    (``Battle.cluster``) drawn with replacement, seeded. A model absent from a resample is left out of that
    resample's ratings. Fewer than two dialogues: no interval (NaN)."""
    models = sorted({b.a for b in battles} | {b.b for b in battles})
    clusters: dict[Hashable, list[int]] = {}
    for i, b in enumerate(battles):
        clusters.setdefault(b.cluster if b.cluster is not None else i, []).append(i)
    members = [np.asarray(v) for v in clusters.values()]
    if len(members) < 2:
        return {m: (math.nan, math.nan) for m in models}
    x, y = _design(battles, models, base)
    rng = np.random.default_rng(seed)
    draws = np.full((resamples, len(models)), np.nan)
    for k in range(resamples):
        rows = np.concatenate([members[int(j)] for j in rng.integers(0, len(members), len(members))])
        present = np.flatnonzero(np.abs(x[rows]).sum(axis=0) > 0)
        beta = _coefficients(x[rows][:, present], y[rows])
        draws[k, present] = init + scale * beta
    tail = 100 * (1 - level) / 2
    out = {}
    for i, m in enumerate(models):
        got = draws[:, i][~np.isnan(draws[:, i])]
        out[m] = ((float(np.percentile(got, tail)), float(np.percentile(got, 100 - tail))) if len(got)
                  else (math.nan, math.nan))
    return out
