"""CharacterBench's thirteen dimensions: where an item holds its reference, and whether the judge sees the
dialogue (process_wo_context_*_all.py leaves it out for some). Each dimension's scale is the one its judge
prompt states (``release.scale_top``), in each language: the release's zh and en prompts differ on one."""

from __future__ import annotations

from dataclasses import dataclass

from rpbench.tasks.modes.characterbench.release import scale_top


@dataclass(frozen=True)
class Dimension:
    name: str
    reference: tuple[str, ...] | None  # the path to the reference in the item, None: the judge gets none
    dialogue: bool  # the judge sees the dialogue before the user's last turn

    def top(self, language: str) -> int:
        """The top of the judge's scale in ``language``, as the release's prompt states it."""
        return scale_top(self.name, language)

    def highest_top(self) -> int:
        """The highest top of its scales (a person's score, given once for both languages, is within it)."""
        return max(self.top("zh"), self.top("en"))


_ANSWER = ("messages", "output", "answer")
_EMOTION = ("messages", "output", "emotion")

DIMENSIONS: dict[str, Dimension] = {d.name: d for d in (
    Dimension("memory_consistency", ("messages", "output", "dialogue_segments"), False),
    Dimension("fact_accuracy", _ANSWER, False),
    Dimension("boundary_consistency", ("response_messages", "reference_response"), False),
    Dimension("attribute_consistency_bot", _ANSWER, False),
    Dimension("attribute_consistency_human", ("messages", "reference"), True),
    Dimension("behavior_consistency_bot", ("messages", "output", "reference"), True),
    Dimension("behavior_consistency_human", ("response_messages", "character_style"), True),
    Dimension("emotion_self_regulation", _EMOTION, False),
    Dimension("empathetic_responsiveness", _EMOTION, False),
    Dimension("morality_stability", None, True),
    Dimension("morality_robustness", None, True),
    Dimension("human_likeness", None, True),
    Dimension("engagement", None, True),
)}


def dimension_of(stem: str) -> Dimension | None:
    """The dimension a file is for, by its name as released (``engagement_test.json``) or without ``_test``."""
    return DIMENSIONS.get(stem.removesuffix("_test"))
