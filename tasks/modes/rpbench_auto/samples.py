"""RPBench-Auto's samples for the viewer: one per dialogue (a candidate against the baseline on one character or
scene), round by round: what the judge, as the user, said; the two replies side by side in the slots the judge saw
them in, the winner marked; the judge's verdict and reason; and how the dialogue ended."""

from __future__ import annotations

from collections.abc import Sequence

from rpbench.tasks.modes.rpbench_auto.records import DialogueEnd, Round
from rpbench.tasks.reports.viewer import Part, Sample


def _slot(r: Round, slot: str) -> str:
    system = r.model_a if slot == "a" else r.model_b
    role = "candidate" if system == r.model else "baseline"
    won = " - won" if r.outcome == f"model_{slot}" else ""
    return f"{slot.upper()}: {system} ({role}){won}"


def _verdict(r: Round) -> str:
    if r.outcome != "none":
        said = f"winner {r.said_winner}"
    elif r.said_winner is None:
        said = "no winner named"
    else:
        said = f"said winner {r.said_winner!r}, which names neither reply"
    return said + (f": {r.reason}" if r.reason else "")


def _ending(end: DialogueEnd) -> str:
    if end.status == "failed":
        return f"failed after {end.rounds} rounds: {end.error or 'no reason given'}"
    return f"after {end.rounds} rounds" + (", the winning reply said the scene was finished"
                                           if end.ended_by_scene else "")


def samples(rounds: Sequence[Round], ends: Sequence[DialogueEnd]) -> list[Sample]:
    """A sample per candidate and item: those with rounds in the order of the rounds table, then those that ended
    before their first round (a judge that never opened, say)."""
    by_dialogue: dict[tuple[str, str], list[Round]] = {}
    for r in rounds:
        by_dialogue.setdefault((r.model, r.dialogue_id), []).append(r)
    ended = {(e.model, f"{e.subset}:{e.item_id}"): e for e in ends}
    out = []
    for (model, dialogue), mine in by_dialogue.items():
        mine = sorted(mine, key=lambda r: r.round)
        parts: list[Part] = []
        for r in mine:
            parts.append(Part(f"user, round {r.round}", r.user, "turn"))
            parts += [Part(_slot(r, "a"), r.reply_a, "pair"), Part(_slot(r, "b"), r.reply_b, "pair")]
            parts.append(Part(f"judge, round {r.round}", _verdict(r), "note"))
        end = ended.get((model, dialogue))
        if end is not None:
            parts.append(Part("ended", _ending(end), "note"))
        won, decisive = sum(r.win == 1 for r in mine), sum(r.win is not None for r in mine)
        score = f"won {won} of {decisive} rounds" + (f", {len(mine) - decisive} with no winner"
                                                    if decisive < len(mine) else "")
        first = mine[0]
        out.append(Sample(id=f"{model}/{dialogue}", item=dialogue, model=model, title=f"{first.name} ({first.subset})",
                          score=score, parts=parts, facets={"subset": first.subset, "language": first.language,
                                                            "ended": end.status if end else "unknown"}))
    for (model, dialogue), end in ended.items():
        if (model, dialogue) not in by_dialogue:
            out.append(Sample(id=f"{model}/{dialogue}", item=dialogue, model=model,
                              title=f"{end.item_id} ({end.subset})", score="no round judged",
                              parts=[Part("ended", _ending(end), "note")],
                              facets={"subset": end.subset, "ended": end.status}))
    return out
