"""FURINA's samples for the viewer: one per (item, model under test), with the scene, the conversation before
the turn, the reply under test beside the base reply, and both judgments (one per order) with their reasoning.
The outcome is the reply under test against the base reply, both orders averaged."""

from __future__ import annotations

from collections.abc import Sequence

from rpbench.tasks.modes.furina.domain import Generation, Judgment
from rpbench.tasks.modes.furina.evaluation.run import BASE, Bench
from rpbench.tasks.modes.furina.evaluation.scoring import win_share
from rpbench.tasks.modes.furina.records import ItemScore
from rpbench.tasks.reports.viewer import Part, Sample, failed_text

OUTCOMES = ("win", "tie", "loss", "unanswered", "unjudged")


def outcome(score: ItemScore | None) -> str:
    """win / tie / loss for the reply under test, by its share of the win over both orders."""
    if score is None:
        return "unjudged"
    if not score.answered or score.sigma1 is None or score.sigma2 is None:
        return "unanswered"
    share = win_share(score.sigma1, score.sigma2)
    return "win" if share > 0.5 else "loss" if share < 0.5 else "tie"


def _reply(g: Generation | None) -> str:
    if g is None:
        return "(no answer recorded)"
    return failed_text(g.text, g.error)


def samples(bench: Bench, scores: Sequence[ItemScore], generations: Sequence[Generation],
            judgments: Sequence[Judgment]) -> list[Sample]:
    """One sample per item and model under test (the base model's replies are shown beside each)."""
    text = {(g.item_id, g.model): g for g in generations}
    judged: dict[tuple[str, str], list[Judgment]] = {}
    for j in judgments:
        judged.setdefault((j.item_id, j.model), []).append(j)
    scored = {(s.item_id, s.model): s for s in scores}
    models = sorted({g.model for g in generations} - {BASE})
    out = []
    for it in bench.items:
        scene = bench.scenes[it.scene_id]
        for model in models:
            s = scored.get((it.item_id, model))
            parts = [Part("World", scene.background, "note"), Part("Situation", scene.situation, "note")]
            parts += [Part(line.speaker, line.text, "turn") for line in it.history]
            parts.append(Part(f"Reply under test ({model})", _reply(text.get((it.item_id, model)))))
            parts.append(Part("Base reply", _reply(text.get((it.item_id, BASE)))))
            for j in sorted(judged.get((it.item_id, model), []), key=lambda j: j.order):
                shown = "reply under test shown first" if j.order == 1 else "base reply shown first"
                sigma = j.sigma if j.sigma is not None else "failed"
                parts.append(Part(f"Judgment, order {j.order} ({shown}), sigma {sigma}",
                                  j.rationale or j.error or "", "note"))
            result = outcome(s)
            out.append(Sample(id=f"{model}/{it.item_id}", item=it.item_id, model=model,
                              title=f"{it.item_id}: {it.character}, {it.dimension}",
                              score=result + (f" (score {s.score:.2f})" if s is not None else ""), parts=parts,
                              facets={"dimension": it.dimension, "language": it.language,
                                      "character": it.character, "outcome": result}))
    return out
