"""PingPong's numbers, as its published leaderboard code computes them.

Per judge and conversation: each criterion is the mean over turns, the final
score the criteria weighted 0.333 each and summed (``build_table_v2.py``: so a
final is 0.1% below the criteria's mean; ``exact_mean`` divides by the weights'
sum instead), and a conversation with any turn flagged as a refusal is that
judge's refusal. Judges are pooled per conversation by a weighted mean over the
judges that did not flag it; a conversation every judge flagged has no score.
The refusal ratio counts conversations that any judge flagged.

Length normalisation, per language, against the median of the models' mean reply
lengths (characters): v2 (``build_table_v2.py``) multiplies a model's
conversation scores by ``1 + (median / length - 1) x 0.07`` kept within 0.93 and
1, so only models longer than the median lose, at most 7%; v1
(``build_table_v1.py``) adds ``(max - min of the models' finals) x min(0,
tanh((median - length) / (3 x median)))`` to the model's final.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rpbench.tasks.modes.pingpong.records import CRITERIA, Grades

RELEASE_WEIGHT = 0.333  # each criterion's weight in PingPong's final score
ADJUSTMENT = 0.07  # how strongly length moves the score
FLOOR = 0.93  # the largest penalty: 7%
RANK_GAP = 0.06  # a new rank group starts when a score is this far below its group's first


@dataclass(frozen=True)
class JudgeScore:
    criteria: dict[str, float]
    final: float
    refusal: bool


@dataclass(frozen=True)
class Pooled:
    criteria: dict[str, float] | None
    final: float | None
    refused_by: list[str]


def _weighted(values: Sequence[float], weights: Sequence[float]) -> float:
    return sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)


def judge_score(verdicts: Sequence[Grades], criterion_weights: Mapping[str, float] | None = None,
                exact_mean: bool = False) -> JudgeScore:
    """One judge on one conversation: criterion = mean over turns; final = the criteria weighted and summed, as
    PingPong's code does (0.333 each unless weights are given), or their weighted mean (``exact_mean``)."""
    if not verdicts:
        raise ValueError("a conversation judged with no turns")
    weights = criterion_weights or {c: RELEASE_WEIGHT for c in CRITERIA}
    crit = {c: statistics.fmean(float(getattr(v, f"{c}_score")) for v in verdicts) for c in CRITERIA}
    values, w = [crit[c] for c in CRITERIA], [weights[c] for c in CRITERIA]
    final = _weighted(values, w) if exact_mean else sum(v * x for v, x in zip(values, w, strict=True))
    return JudgeScore(crit, final, any(v.is_refusal for v in verdicts))


def pool_judges(by_judge: Mapping[str, JudgeScore], judge_weights: Mapping[str, float] | None = None) -> Pooled:
    """Judges averaged per conversation and criterion, leaving out each judge that flagged a refusal."""
    refused = sorted(j for j, s in by_judge.items() if s.refusal)
    kept = [j for j in sorted(by_judge) if j not in refused]
    if not kept:
        return Pooled(None, None, refused)
    w = [float((judge_weights or {}).get(j, 1.0)) for j in kept]
    crit = {c: _weighted([by_judge[j].criteria[c] for j in kept], w) for c in CRITERIA}
    return Pooled(crit, _weighted([by_judge[j].final for j in kept], w), refused)


def length_factor(model_length: float, median_length: float, adjustment: float = ADJUSTMENT,
                  floor: float = FLOOR) -> float:
    """1 for a model at or below the median length; down to ``floor`` for much longer ones."""
    if model_length <= 0:
        return 1.0
    x = 1.0 + (median_length / model_length - 1.0) * adjustment
    return min(1.0, max(floor, x))


def length_factors(lengths: Mapping[str, float]) -> dict[str, float]:
    """Each model's factor, against the median of the models' mean reply lengths (so it depends on the set)."""
    if not lengths:
        return {}
    median = statistics.median(lengths.values())
    return {m: length_factor(v, median) for m, v in lengths.items()}


def v1_length_shifts(lengths: Mapping[str, float], finals: Mapping[str, float]) -> dict[str, float]:
    """v1's length normalisation: what each model's final score moves by (never up), against the median of the
    models' mean reply lengths and the spread of their finals."""
    if not lengths:
        return {}
    median = statistics.median(lengths.values())
    spread = (max(finals.values()) - min(finals.values())) if finals else 0.0
    return {m: spread * min(0.0, math.tanh((median - v) / (median * 3))) if median > 0 else 0.0
            for m, v in lengths.items()}


def rank_groups(scores: Sequence[float], gap: float = RANK_GAP) -> list[int]:
    """Ranks for scores sorted best first: a new rank starts when a score is more than ``gap`` below the
    first score of the current rank."""
    ranks, head, rank = [], None, 0
    for k, s in enumerate(scores):
        if head is None or head - s > gap:
            head, rank = s, k + 1
        ranks.append(rank)
    return ranks
