"""DMT-RoleBench's samples for the viewer: one per dialogue (a model on a seed in one prompt format), with the
seed, each round's query and reply, the judge's label and reason per metric, and how the dialogue ended."""

from __future__ import annotations

from collections.abc import Sequence

from rpbench.tasks.modes.dmt.records import DialogueEnd, DialogueScore, Label, Round, Seed
from rpbench.tasks.reports.viewer import Part, Sample, failed_text


def _label(lb: Label) -> str:
    verdict = lb.label or f"failed ({lb.error or 'no label'})"
    return f"{lb.metric}: {verdict}" + (f" - {lb.explanation}" if lb.explanation else "")


def samples(seeds: Sequence[Seed], rounds: Sequence[Round], labels: Sequence[Label], ends: Sequence[DialogueEnd],
            scores: Sequence[DialogueScore]) -> list[Sample]:
    by_seed = {s.id: s for s in seeds}
    by_dialogue: dict[tuple[str, str], list[Round]] = {}
    for r in rounds:
        by_dialogue.setdefault((r.model, r.dialogue_id), []).append(r)
    labelled: dict[tuple[str, str, int], list[Label]] = {}
    for lb in labels:
        labelled.setdefault((lb.model, lb.dialogue_id, lb.round), []).append(lb)
    ended = {(e.model, e.dialogue_id): e for e in ends}
    metric_scores: dict[tuple[str, str], list[DialogueScore]] = {}
    for s in scores:
        metric_scores.setdefault((s.model, s.dialogue_id), []).append(s)
    out = []
    for (model, did), mine in sorted(by_dialogue.items()):
        mine.sort(key=lambda r: r.round)
        seed = by_seed.get(mine[0].seed_id)
        role = seed.role.name if seed else "role"
        parts = ([Part("Seed", f"{seed.role.name} ({seed.role_type}); topic: {seed.topic}; intent: {seed.intent}",
                       "note")] if seed else [])
        for r in mine:
            steer = "; ".join(f"{k}: {v}" for k, v in (("sub-topic", r.sub_topic), ("sub-intent", r.sub_intent)) if v)
            if steer:
                parts.append(Part(f"round {r.round} steered to", steer, "note"))
            parts.append(Part(f"user, round {r.round}", r.query, "turn"))
            parts.append(Part(role, failed_text(r.response, r.error), "turn"))
            parts += [Part("label", _label(lb), "note")
                      for lb in sorted(labelled.get((model, did, r.round), []), key=lambda lb: lb.metric)]
        end = ended.get((model, did))
        if end is not None:
            parts.append(Part("ended", f"after {end.rounds} rounds: {end.reason}", "note"))
        judged = [s for s in metric_scores.get((model, did), []) if s.score is not None]
        good = sum(s.score == 1 for s in judged)
        score = (f"{good} of {len(judged)} metrics good over the dialogue" if judged
                 else "failed" if end and end.failed else "not scored")
        out.append(Sample(id=f"{model}/{did}", item=did, model=model, title=f"{role}: {did}", score=score,
                          parts=parts,
                          facets={"language": seed.language if seed else "", "format": mine[0].prompt_format,
                                  "role type": seed.role_type if seed else "",
                                  "ended": ("failed" if end.failed else end.reason) if end else "unknown"}))
    return out
