"""The scoring math (FURINA section 5, appendix R), as pure functions.

A judgment sigma is on 1-5 with 1 = strong preference for reply A. The test
reply is A in the first order (sigma1) and B in the second (sigma2), so
6 - sigma2 puts the second judgment on the first one's scale.
Score_i = (f(sigma1) + f(6 - sigma2)) / 2 with f = {1: 3, 2: 1, 3: 0.5, 4: 0, 5: 0}:
a reply earns points only when it matches or beats the base.
Performance = sum(Score_i) / (3 N) * 100.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

DEFAULT_F = {1: 3.0, 2: 1.0, 3: 0.5, 4: 0.0, 5: 0.0}
MAX_F = 3.0


def item_score(sigma1: int, sigma2: int, f: dict[int, float] = DEFAULT_F) -> float:
    return 0.5 * (f[sigma1] + f[6 - sigma2])


def performance(scores: Sequence[float], max_f: float = MAX_F) -> float:
    if not scores:
        return math.nan
    return 100.0 * sum(scores) / (max_f * len(scores))


def performance_statistic(sample: np.ndarray, axis: int) -> np.ndarray:
    """The performance of resampled item scores, as scipy's bootstrap calls it."""
    return 100.0 * np.mean(sample, axis=axis) / MAX_F




def position_bias(pairs: Sequence[tuple[int, int]]) -> dict[str, float]:
    """How often the two orders disagree on who is better, and the mean of sigma1 + sigma2 - 6.

    With no position bias, sigma2 mirrors sigma1 (sigma1 + sigma2 = 6). A positive mean
    means the judge leans towards the reply shown second; negative, towards the first.
    """
    if not pairs:
        return {"disagreement_rate": math.nan, "mean_offset": math.nan}

    def side(s: int) -> int:
        return (s > 3) - (s < 3)

    disagree = sum(side(s1) != side(6 - s2) for s1, s2 in pairs)
    offset = sum(s1 + s2 - 6 for s1, s2 in pairs) / len(pairs)
    return {"disagreement_rate": disagree / len(pairs), "mean_offset": offset}


def win_share(sigma1: int, sigma2: int) -> float:
    """The reply under test's share of the win over both orders: 1 = much better in both, 0.5 = even.

    sigma1 judges it as A (1 = A much better), sigma2 as B (5 = B much better).
    """
    return ((5 - sigma1) / 4 + (sigma2 - 1) / 4) / 2


def hallucinated(check_order1: bool, check_order2: bool) -> bool:
    """An item counts as hallucinated only when the checker says Yes for both judgments."""
    return check_order1 and check_order2


def slot_wins(pairs: Sequence[tuple[int, int]]) -> dict[str, float]:
    """Of the decisive judgments (sigma not 3) in both orders, the share won by the reply in slot A and in B.

    sigma below 3 is a win for slot A, above 3 for slot B, whichever reply sits there.
    """
    sigmas = [s for pair in pairs for s in pair]
    a, b = sum(s < 3 for s in sigmas), sum(s > 3 for s in sigmas)
    if a + b == 0:
        return {"slot_a_share": math.nan, "slot_b_share": math.nan}
    return {"slot_a_share": a / (a + b), "slot_b_share": b / (a + b)}


def reliability(rate_percent: float, n_checked: int) -> float | None:
    """100 / hallucination rate (in percent): infinite at rate 0, and None when nothing was checked.

    No checked items is no evidence at all, which must not read as perfect reliability.
    """
    if n_checked == 0 or math.isnan(rate_percent):
        return None
    return math.inf if rate_percent == 0 else 100.0 / rate_percent


def pareto_front(points: dict[str, tuple[float, float | None]]) -> list[str]:
    """Models not dominated in (performance, reliability), both higher-is-better.

    A model without a reliability (nothing checked) cannot be placed, so it is neither on the frontier nor
    dominating anyone; infinite reliability (checked, never hallucinated) is the best there is.
    """
    placed = {m: (p, r) for m, (p, r) in points.items() if r is not None and not math.isnan(p)}
    front = []
    for name, (p, r) in placed.items():
        dominated = any(p2 >= p and r2 >= r and (p2 > p or r2 > r)
                        for other, (p2, r2) in placed.items() if other != name)
        if not dominated:
            front.append(name)
    return sorted(front)
