"""Shapes of what the pool's LLM steps must return, and how a character sketch becomes a scene character."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, create_model, field_validator

from rpbench.tasks.core.records import Attribute, SceneCharacter
from rpbench.tasks.modes.furina.profiles import (
    PRIVATE_BY_DEFAULT,
    PROFILE_KEYS,
    Age,
    Appearance,
    Gender,
    Hobbies,
    LongText,
    Motivation,
    Name,
    Nickname,
    Persona,
    SpeechPattern,
)


class BoundaryVerdict(BaseModel):
    """Does the chunk end mid-story? If so, where does the unfinished part begin?"""

    reason: str = Field(max_length=400)
    unfinished: bool
    unfinished_starts_with: str = Field(
        default="", max_length=200, description="The first words, copied exactly, of the unfinished trailing part."
    )


class ExtractedLine(BaseModel):
    speaker: str = Field(min_length=1, max_length=80)
    text: str = Field(min_length=1, max_length=600)


class ExtractedCharacter(BaseModel):
    name: str = Field(min_length=1, max_length=80)
    description: str = Field(max_length=300)


class ExtractedScene(BaseModel):
    summary: str = Field(min_length=1, max_length=600)
    state: Literal["finished", "truncated"]
    characters: list[ExtractedCharacter] = Field(max_length=12)
    dialogue: list[ExtractedLine] = Field(max_length=60)


class ChunkExtraction(BaseModel):
    scenes: list[ExtractedScene] = Field(max_length=8)


class AliasGroup(BaseModel):
    canonical: str = Field(min_length=1, max_length=80)
    aliases: list[str] = Field(max_length=20)


class AliasMap(BaseModel):
    groups: list[AliasGroup] = Field(max_length=100)


class CharacterSketch(BaseModel):
    name: Name
    nickname: Nickname
    gender: Gender
    age: Age
    appearance: Appearance
    persona: Persona
    relationships: LongText
    hobbies: Hobbies
    speech_pattern: SpeechPattern
    background_public: LongText
    background_private: LongText
    motivation: Motivation


class Fragment(BaseModel):
    world: str = Field(min_length=1, max_length=1200)
    situation: str = Field(min_length=1, max_length=1200)
    characters: list[CharacterSketch] = Field(max_length=12)


def fragment_schema(names: list[str]) -> type[Fragment]:
    """A Fragment whose characters can only be the scene's speakers, one entry each.

    Constrained decoding then cannot invent names, and any model's reply is checked against the cast.
    """
    sketch = create_model("SceneSketch", __base__=CharacterSketch, name=(Literal[tuple(names)], ...))  # type: ignore[arg-type]

    class SceneFragment(Fragment):
        characters: list[sketch] = Field(min_length=len(names), max_length=len(names))  # type: ignore[valid-type]

        @field_validator("characters")
        @classmethod
        def _each_once(cls, chars: list[Any]) -> list[Any]:
            missing = sorted(set(names) - {c.name for c in chars})
            if missing:
                raise ValueError(f"no profile for {', '.join(missing)}")
            return chars

    return SceneFragment


def sketch_to_character(sketch: CharacterSketch) -> SceneCharacter:
    """Profile attributes in a fixed order, empty ones left out, private ones marked private."""
    profile = [
        Attribute(key=key, value=value.strip(), visibility="private" if key in PRIVATE_BY_DEFAULT else "public")
        for key in PROFILE_KEYS
        if (value := getattr(sketch, key)).strip()
    ]
    profile.insert(0, Attribute(key="name", value=sketch.name.strip(), visibility="public"))
    return SceneCharacter(name=sketch.name.strip(), motivation=sketch.motivation.strip(), profile=profile)
