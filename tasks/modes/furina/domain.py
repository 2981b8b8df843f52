"""FURINA's vocabulary: test characters and their profiles, scenes of the pool, benchmark items, the answers
of models under test and the judge's pairwise judgments (FURINA sections 3-4).

They validate themselves, so a bad record is refused where it enters, with the field that is wrong.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator

from rpbench.tasks.core.errors import duplicates
from rpbench.tasks.core.records import LANGUAGES, Record, Status

CHARACTER_TYPES = ("established", "synthesized")


Visibility = Literal["public", "private"]


class Attribute(Record):
    """One key-value pair of a profile; only public ones are ever shown to other characters."""

    key: str = Field(min_length=1)
    value: str = Field(min_length=1)
    visibility: Visibility

    @field_validator("value")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the value is blank")
        return v


def _unique_keys(profile: list[Attribute]) -> list[Attribute]:
    dupes = duplicates([a.key for a in profile])
    if dupes:
        raise ValueError(f"duplicate key '{dupes[0]}'")
    return profile


# A profile: ordered attributes, each key at most once.
Profile = Annotated[list[Attribute], AfterValidator(_unique_keys)]


class Line(Record):
    """One utterance of a dialogue."""

    speaker: str = Field(min_length=1)
    text: str


class Character(Record):
    """A test character (FURINA section 3.1): a name, a language, a type and an ordered profile."""

    name: str = Field(min_length=1)
    language: str
    type: Literal["established", "synthesized"]
    source: str | None = None
    attributes: Profile = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the name is empty")
        return v.strip()

    @field_validator("language")
    @classmethod
    def _known_language(cls, v: str) -> str:
        base = v.split("-")[0].lower()
        if base not in LANGUAGES:
            raise ValueError(f"unknown language '{v}' (known: {', '.join(LANGUAGES)}, as BCP-47 tags)")
        return base

    def public(self) -> list[Attribute]:
        return [a for a in self.attributes if a.visibility == "public"]


class SceneCharacter(Record):
    """A character of a scene: its profile and, in the first person, what it wants right now."""

    name: str = Field(min_length=1)
    motivation: str = Field(min_length=1)
    profile: Profile


class Scene(Record):
    """One ready scene of the pool: background, characters with motivations, the original dialogue."""

    scene_id: str = Field(min_length=1)
    book_id: str = Field(min_length=1)
    language: str
    summary: str = Field(min_length=1)
    background: str = Field(min_length=1)
    situation: str = Field(min_length=1)
    original_dialogue: list[Line] = Field(min_length=1)
    characters: list[SceneCharacter] = Field(min_length=1)
    chunk_indices: list[int] = Field(default_factory=list)
    source: Literal["book", "custom", "synthesized"] = "book"

    @field_validator("language")
    @classmethod
    def _known_language(cls, v: str) -> str:
        if v not in LANGUAGES:
            raise ValueError(f"unknown language '{v}' (use {' or '.join(LANGUAGES)})")
        return v

    @field_validator("characters")
    @classmethod
    def _unique_names(cls, characters: list[SceneCharacter]) -> list[SceneCharacter]:
        dupes = duplicates([c.name for c in characters])
        if dupes:
            raise ValueError(f"duplicate character names {dupes}")
        return characters


class Item(Record):
    """A benchmark item: a dialogue position, the one dimension it tests, and the reply that won it."""

    item_id: str = Field(min_length=1)
    character: str
    character_type: Literal["established", "synthesized"]
    language: str
    scene_id: str
    dialogue_id: str
    dimension: str
    history: list[Line]
    test_utterance: str
    base_utterance: str
    source_model: str
    sigma: int
    flags: list[str] = Field(default_factory=list)


class Generation(Record):
    """One model's answer to one item; a failed call keeps its error and no text."""

    item_id: str
    model: str
    text: str | None
    status: Status
    error: str | None = None


class Judgment(Record):
    """A pairwise judgment of one item for one model, in one order (1: reply under test shown first)."""

    item_id: str
    model: str
    order: int
    sigma: int | None
    rationale: str | None
    status: Status
    raw: str | None = None
    error: str | None = None
