"""CharacterBench's thirteen dimensions: the top of each one's judge scale, where an item holds its reference,
and whether the judge sees the dialogue (process_wo_context_*_all.py leaves it out for some)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dimension:
    name: str
    top: int  # the judge's scale runs 1..top
    reference: tuple[str, ...] | None  # the path to the reference in the item, None: the judge gets none
    dialogue: bool  # the judge sees the dialogue before the user's last turn


_ANSWER = ("messages", "output", "answer")
_EMOTION = ("messages", "output", "emotion")

DIMENSIONS: dict[str, Dimension] = {d.name: d for d in (
    Dimension("memory_consistency", 4, ("messages", "output", "dialogue_segments"), False),
    Dimension("fact_accuracy", 4, _ANSWER, False),
    Dimension("boundary_consistency", 3, ("response_messages", "reference_response"), False),
    Dimension("attribute_consistency_bot", 5, _ANSWER, False),
    Dimension("attribute_consistency_human", 4, ("messages", "reference"), True),
    Dimension("behavior_consistency_bot", 4, ("messages", "output", "reference"), True),
    Dimension("behavior_consistency_human", 3, ("response_messages", "character_style"), True),
    Dimension("emotion_self_regulation", 4, _EMOTION, False),
    Dimension("empathetic_responsiveness", 4, _EMOTION, False),
    Dimension("morality_stability", 2, None, True),
    Dimension("morality_robustness", 2, None, True),
    Dimension("human_likeness", 5, None, True),
    Dimension("engagement", 5, None, True),
)}


def dimension_of(stem: str) -> Dimension | None:
    """The dimension a file is for, by its name as released (``engagement_test.json``) or without ``_test``."""
    return DIMENSIONS.get(stem.removesuffix("_test"))
