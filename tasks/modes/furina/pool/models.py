"""Shapes of what the pool's LLM steps must return, and how a character sketch becomes a scene character."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, create_model

from rpbench.tasks.modes.furina.domain import Attribute, SceneCharacter
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
    # A scene is people talking to each other: at least one character and an exchange of two lines (a
    # chunk without one answers with no scenes at all). The schema says so, so constrained decoders
    # cannot return the hollow scenes a small model otherwise produces.
    summary: str = Field(min_length=1, max_length=600)
    state: Literal["finished", "truncated"]
    characters: list[ExtractedCharacter] = Field(min_length=1, max_length=12)
    dialogue: list[ExtractedLine] = Field(min_length=2, max_length=60)


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
    """A Fragment with exactly one profile per speaker of the scene, in the scene's order.

    The characters are a fixed tuple (JSON schema ``prefixItems``) whose k-th entry can only be named
    ``names[k]``, so a constrained decoder can neither invent a name nor repeat one, and any model's
    reply is checked against the cast.
    """
    sketches = tuple(
        create_model(f"SceneSketch{k}", __base__=CharacterSketch, name=(Literal[name], ...))  # type: ignore[arg-type]
        for k, name in enumerate(names)
    )

    class SceneFragment(Fragment):
        characters: tuple[sketches] = Field(...)  # type: ignore[assignment,valid-type]

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
