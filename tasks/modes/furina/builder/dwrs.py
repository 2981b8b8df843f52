"""Dynamically Weighted Random Selection (FURINA appendix C, Algorithm 1).

w_i = c_max - c_i + 1, P(d_i) = w_i / sum(w), d* = argmax P, ties broken
uniformly at random. Under-used dimensions are always the most likely.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from rpbench.tasks.modes.furina.dimensions import DIMENSIONS

__all__ = ["DIMENSIONS", "covered", "dwrs_choose", "dwrs_probabilities", "dwrs_weights"]


def dwrs_weights(counts: Sequence[int]) -> list[int]:
    c_max = max(counts)
    return [c_max - c + 1 for c in counts]


def dwrs_probabilities(counts: Sequence[int]) -> list[float]:
    weights = dwrs_weights(counts)
    total = sum(weights)
    return [w / total for w in weights]


def dwrs_choose(counts: Sequence[int], rng: random.Random) -> int:
    """Index of the chosen dimension: a most probable one, uniformly among ties."""
    probs = dwrs_probabilities(counts)
    best = max(probs)
    tied = [i for i, p in enumerate(probs) if p == best]
    return tied[rng.randrange(len(tied))]


def covered(counts: Sequence[int], tau: int) -> bool:
    """The stop rule: every dimension has at least tau accepted items."""
    return min(counts) >= tau
