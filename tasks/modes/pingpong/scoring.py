"""PingPong's numbers, as its published leaderboard code computes them.

Per judge and conversation: each criterion is the mean over turns, the final
score the (weighted) mean of the criteria, and a conversation with any turn
flagged as a refusal is that judge's refusal. Judges are pooled per
conversation by a weighted mean over the judges that did not flag it; a
conversation every judge flagged has no score. The refusal ratio counts
conversations that any judge flagged. The length-normalised (LN) score
multiplies a model's conversation scores by a factor that only penalises models
whose mean reply is longer than the median model's, by at most 7%.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rpbench.tasks.modes.pingpong.records import CRITERIA, Grades

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


def judge_score(verdicts: Sequence[Grades], criterion_weights: Mapping[str, float] | None = None) -> JudgeScore:
    """One judge on one conversation: criterion = mean over turns; final = weighted mean of the criteria."""
    if not verdicts:
        raise ValueError("a conversation judged with no turns")
    weights = criterion_weights or {c: 1.0 for c in CRITERIA}
    crit = {c: statistics.fmean(float(getattr(v, f"{c}_score")) for v in verdicts) for c in CRITERIA}
    final = _weighted([crit[c] for c in CRITERIA], [weights[c] for c in CRITERIA])
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


def rank_groups(scores: Sequence[float], gap: float = RANK_GAP) -> list[int]:
    """Ranks for scores sorted best first: a new rank starts when a score is more than ``gap`` below the
    first score of the current rank."""
    ranks, head, rank = [], None, 0
    for k, s in enumerate(scores):
        if head is None or head - s > gap:
            head, rank = s, k + 1
        ranks.append(rank)
    return ranks
