"""RoleInteract's samples for the viewer: the dialogue, the question and its options, the model's raw reply,
the letters read from it, the gold answer and the item's score."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rpbench.tasks.modes.roleinteract.loader import readable
from rpbench.tasks.modes.roleinteract.records import Answer, Item, ItemScore
from rpbench.tasks.reports.viewer import Part, Sample, failed_text, gist


def _outcome(answer: Answer, score: ItemScore | None) -> tuple[str, str]:
    """The sample's score line and its outcome facet."""
    if answer.status == "failed":
        return "failed", "failed"
    if answer.status == "unparsed":
        return "unreadable", "unreadable"
    if score is None or score.score is None:
        return "not scored", "not scored"
    # Item scores are stored x100, as the tables show them.
    outcome = "right" if score.score == 100 else "wrong" if score.score == 0 else "partly right"
    return f"{score.score:.0f} / 100", outcome


def _title(item: Item) -> str:
    """The item's id, whom the model plays, and the line it answers (the instruction is often the same for a
    whole column; the last utterance tells items apart)."""
    role = f" as {item.target}" if item.target else ""
    last = item.dialogue[-1] if item.dialogue else None
    said = f": {gist(f'{last.speaker}: {last.text}', 70)}" if last else ""
    return f"{item.item_id}{role}{said}"


def samples(items: Sequence[Item], answers: Sequence[Answer], scores: Sequence[ItemScore]) -> Iterator[Sample]:
    """One sample per answer, made as the viewer is written (a run of 100,000 answers never holds them all)."""
    by_item = {i.item_id: i for i in items}
    scored = {(s.model, s.item_id): s for s in scores}
    for a in answers:
        item = by_item.get(a.item_id)
        if item is None:
            continue
        # Shown as the file's C1 control characters were meant (punctuation); the prompts send them as read.
        parts = [Part(readable(p.name), readable(p.text), "note") for p in item.profiles]
        parts += [Part(readable(u.speaker), readable(u.text), "turn") for u in item.dialogue]
        if item.instruction.strip():
            parts.append(Part("Question", readable(item.instruction)))
        if item.choices:
            parts.append(Part("Options", "\n".join(f"{c.letter}. {readable(c.text)}" for c in item.choices)))
        parts.append(Part(f"Reply ({a.model})", failed_text(a.text, a.error)))
        if item.choices:
            read = ", ".join(a.letters) if a.letters else "none"
            parts.append(Part("Letters read", read))
            parts.append(Part("Gold", ", ".join(item.label)))
        else:
            parts.append(Part("Keywords to recall", ", ".join(item.label)))
        score, outcome = _outcome(a, scored.get((a.model, a.item_id)))
        yield Sample(id=f"{a.model}/{a.item_id}", item=a.item_id, model=a.model,
                     title=_title(item), score=score,
                     parts=parts, facets={"language": item.language, "column": item.column, "outcome": outcome})
