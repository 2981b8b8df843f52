"""Shapes of what the pool's LLM steps must return, and of a finished pool scene.

Length caps keep a small local model's constrained output finite; they are
generous for real models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from rpbench.tasks.core.errors import duplicates

PROFILE_KEYS = (
    "nickname",
    "gender",
    "age",
    "appearance",
    "persona",
    "relationships",
    "hobbies",
    "speech_pattern",
    "background_public",
    "background_private",
)
# Private unless the user says otherwise, as in FURINA's case study.
PRIVATE_BY_DEFAULT = frozenset({"relationships", "hobbies", "speech_pattern", "background_private"})


# -- LLM outputs ------------------------------------------------------------------------------------
class BoundaryVerdict(BaseModel):
    """Does the chunk end mid-story? If so, where does the unfinished part begin?"""

    reason: str = Field(max_length=400)
    unfinished: bool
    unfinished_starts_with: str = Field(
        default="", max_length=200, description="The first words, copied exactly, of the unfinished trailing part."
    )


class Line(BaseModel):
    speaker: str = Field(min_length=1, max_length=80)
    text: str = Field(min_length=1, max_length=600)


class ExtractedCharacter(BaseModel):
    name: str = Field(min_length=1, max_length=80)
    description: str = Field(max_length=300)


class ExtractedScene(BaseModel):
    summary: str = Field(min_length=1, max_length=600)
    state: Literal["finished", "truncated"]
    characters: list[ExtractedCharacter] = Field(max_length=12)
    dialogue: list[Line] = Field(max_length=60)


class ChunkExtraction(BaseModel):
    scenes: list[ExtractedScene] = Field(max_length=8)


class AliasGroup(BaseModel):
    canonical: str = Field(min_length=1, max_length=80)
    aliases: list[str] = Field(max_length=20)


class AliasMap(BaseModel):
    groups: list[AliasGroup] = Field(max_length=100)


class CharacterSketch(BaseModel):
    name: str = Field(min_length=1, max_length=80)
    nickname: str = Field(max_length=120)
    gender: str = Field(max_length=40)
    age: str = Field(max_length=60)
    appearance: str = Field(max_length=400)
    persona: str = Field(max_length=600)
    relationships: str = Field(max_length=600)
    hobbies: str = Field(max_length=300)
    speech_pattern: str = Field(max_length=400)
    background_public: str = Field(max_length=600)
    background_private: str = Field(max_length=600)
    motivation: str = Field(min_length=1, max_length=600, description="First person: what I want right now.")


class Fragment(BaseModel):
    world: str = Field(min_length=1, max_length=1200)
    situation: str = Field(min_length=1, max_length=1200)
    characters: list[CharacterSketch] = Field(max_length=12)


def fragment_schema(names: list[str]) -> type[Fragment]:
    """A Fragment whose characters can only be the scene's speakers, one entry each.

    Constrained decoding then cannot invent names, and any model's reply is checked against the cast.
    """
    sketch = create_model("SceneSketch", __base__=CharacterSketch, name=(Literal[tuple(names)], ...))  # type: ignore[valid-type]

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


# -- pool scenes (also the format of `rpbench pool add`) -------------------------------------------
class Attribute(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1)
    value: str = Field(min_length=1)
    visibility: Literal["public", "private"]


class SceneCharacter(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    motivation: str = Field(min_length=1)
    profile: list[Attribute]

    @field_validator("profile")
    @classmethod
    def _unique_keys(cls, profile: list[Attribute]) -> list[Attribute]:
        dupes = duplicates([a.key for a in profile])
        if dupes:
            raise ValueError(f"duplicate attribute keys {dupes}")
        return profile


class PoolScene(BaseModel):
    """One ready scene: background B, characters with profiles and motivations M, original dialogue D_orig."""

    model_config = ConfigDict(extra="forbid")

    scene_id: str = Field(min_length=1)
    book_id: str = Field(min_length=1)
    language: Literal["en", "zh"]
    summary: str = Field(min_length=1)
    background: str = Field(min_length=1)
    situation: str = Field(min_length=1)
    original_dialogue: list[Line] = Field(min_length=1)
    characters: list[SceneCharacter] = Field(min_length=1)
    chunk_indices: list[int] = Field(default_factory=list)
    source: Literal["book", "custom", "synthesized"] = "book"

    @field_validator("characters")
    @classmethod
    def _unique_names(cls, characters: list[SceneCharacter]) -> list[SceneCharacter]:
        dupes = duplicates([c.name for c in characters])
        if dupes:
            raise ValueError(f"duplicate character names {dupes}")
        return characters


def sketch_to_character(sketch: CharacterSketch) -> SceneCharacter:
    """Profile attributes in a fixed order, empty ones left out, private ones marked private."""
    profile = [
        Attribute(key=key, value=value.strip(), visibility="private" if key in PRIVATE_BY_DEFAULT else "public")
        for key in PROFILE_KEYS
        if (value := getattr(sketch, key)).strip()
    ]
    profile.insert(0, Attribute(key="name", value=sketch.name.strip(), visibility="public"))
    return SceneCharacter(name=sketch.name.strip(), motivation=sketch.motivation.strip(), profile=profile)
