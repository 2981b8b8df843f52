"""CoSER's samples for the viewer: the simulated scene beside the book's conversation, thoughts shown apart
from what is said, and the critic's flaws under each dimension."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterator, Sequence

from rpbench.tasks.modes.coser.records import ENVIRONMENT, NEXT_SPEAKER, Circumstance, Critique, Message
from rpbench.tasks.modes.coser.scoring import thoughts, without_thoughts
from rpbench.tasks.reports.viewer import Part, Sample


def _turns(label: str, speaker: str, text: str) -> list[Part]:
    parts = [Part(f"{label}{speaker}", without_thoughts(text) or "(only thoughts)", "turn")]
    private = thoughts(text)
    if private:
        parts.append(Part(f"{speaker} thinks", " / ".join(private), "note"))
    return parts


def _title(c: Circumstance) -> str:
    """The scene by where it is in the book and who speaks in it (the id repeats the book, a column of its own)."""
    people = [p for p in c.speaking if p != ENVIRONMENT]
    who = ", ".join(people[:4]) + (f" and {len(people) - 4} more" if len(people) > 4 else "")
    return f"plot {c.i_p}, conversation {c.i_c}: {who}"


def samples(circumstances: Sequence[Circumstance], messages: Sequence[Message],
            critiques: Sequence[Critique]) -> Iterator[Sample]:
    """One sample per model and circumstance it has a scene of."""
    scenes: dict[tuple[str, str], list[Message]] = defaultdict(list)
    for m in messages:
        scenes[(m.model, m.circumstance_id)].append(m)
    judged: dict[tuple[str, str], list[Critique]] = defaultdict(list)
    for cr in critiques:
        judged[(cr.model, cr.circumstance_id)].append(cr)
    by_id = {c.circumstance_id: c for c in circumstances}
    for (model, cid), scene in sorted(scenes.items()):
        c = by_id.get(cid)
        if c is None:
            continue
        parts = [Part("Scenario", c.scenario, "note")]
        parts += [p for line in c.original for p in _turns("Book — ", line.speaker, line.text)]
        for m in scene:
            if m.role == NEXT_SPEAKER:
                if m.drawn:
                    parts.append(Part("Next speaker", f"{m.content!r} could not be followed ({m.decided_by}): "
                                                      f"{m.chosen or 'the scene ends'} drawn", "note"))
                continue
            parts += _turns(f"{model} — ", m.role, m.said)
        crits = judged.get((model, cid), [])
        for cr in crits:
            flaws = "\n".join(f"- [{f.type}, severity {f.severity}] "
                              f"{f.instance}" for f in cr.flaws) or "(no flaw found)"
            head = f"{cr.dimension}: {cr.score:.1f}" if cr.score is not None else f"{cr.dimension}: failed"
            parts.append(Part(head, flaws if cr.status == "ok" else f"(no critique: {cr.error})", "note"))
        scored = [cr.score for cr in crits if cr.score is not None]
        score = f"{statistics.fmean(scored):.1f} / 100" if len(scored) == 4 else "not scored"
        yield Sample(id=f"{model}/{cid}", item=cid, model=model, title=_title(c),
                     score=score, parts=parts, facets={"split": c.tag or "-", "book": c.book})
