"""Synthesis of original characters (FURINA appendix A).

Thematic seeds (from every configured seed role, for diversity) -> an original
worldview -> several character profiles in it -> a narrative scene with some of
them -> a dialogue. Each step is reviewed against explicit checks and revised,
a bounded number of times. A profile too close to a known character (fuzzy name
match, or BM25 similarity of the profile text) is rejected and regenerated.
Everything goes through the gateway, so a rerun repeats no call.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field, create_model, model_validator
from rapidfuzz import fuzz

from rpbench import prompts
from rpbench.tasks.llm import Model, Request
from rpbench.tasks.modes.furina.config import SynthesisConfig
from rpbench.tasks.modes.furina.domain import Attribute, Character, Line, Scene, SceneCharacter
from rpbench.tasks.modes.furina.profiles import (
    PRIVATE_BY_DEFAULT,
    Age,
    Appearance,
    Beliefs,
    Gender,
    Hobbies,
    LongText,
    Name,
    SpeechPattern,
)
from rpbench.tasks.stats.similarity import BM25Index

T = TypeVar("T", bound=BaseModel)
NAME_SIMILARITY_LIMIT = 88.0
BM25_SHARE_LIMIT = 0.6


class Seeds(BaseModel):
    themes: list[str] = Field(min_length=1, max_length=6)


class Worldview(BaseModel):
    name: str = Field(min_length=1, max_length=80)
    description: str = Field(min_length=1, max_length=1500)


class ProfileDraft(BaseModel):
    name: Name
    gender: Gender
    age: Age
    appearance: Appearance
    persona: str = Field(min_length=1, max_length=600)
    beliefs: Beliefs
    memories: LongText
    formative_experiences: LongText
    relationships: LongText
    hobbies: Hobbies
    speech_pattern: SpeechPattern
    background_public: LongText
    background_private: LongText


class Cast(BaseModel):
    characters: list[ProfileDraft] = Field(min_length=1, max_length=6)


class Participant(BaseModel):
    name: str = Field(min_length=1, max_length=80)
    motivation: str = Field(min_length=1, max_length=400, description="First person: what I want right now.")


class SceneDraft(BaseModel):
    situation: str = Field(min_length=1, max_length=1200)
    # Each participant carries its own motivation, so names and motivations cannot fall out of step.
    participants: list[Participant] = Field(min_length=2, max_length=5)

    @model_validator(mode="after")
    def _each_once(self) -> SceneDraft:
        if len({p.name for p in self.participants}) != len(self.participants):
            raise ValueError("a character takes part twice")
        return self

    @property
    def characters(self) -> list[str]:
        return [p.name for p in self.participants]


class DraftLine(BaseModel):
    speaker: str = Field(min_length=1, max_length=80)
    text: str = Field(min_length=1, max_length=400)


class DialogueDraft(BaseModel):
    lines: list[DraftLine] = Field(min_length=2, max_length=30)


def scene_schema(cast: list[str]) -> type[SceneDraft]:
    """A SceneDraft whose participants can only be characters of the cast."""
    participant = create_model("Participant", __base__=Participant,
                               name=(Literal[tuple(cast)], ...))  # type: ignore[arg-type]
    return create_model("SceneDraft", __base__=SceneDraft,
                        participants=(list[participant],  # type: ignore[valid-type]
                                      Field(min_length=2, max_length=min(5, len(cast)))))


def dialogue_schema(speakers: list[str]) -> type[DialogueDraft]:
    """A DialogueDraft whose speakers can only be the scene's characters."""
    line = create_model("DialogueLine", speaker=(Literal[tuple(speakers)], ...),  # type: ignore[arg-type]
                        text=(str, Field(min_length=1, max_length=400)))
    return create_model("DialogueDraft", __base__=DialogueDraft,
                        lines=(list[line], Field(min_length=2, max_length=30)))  # type: ignore[valid-type]


class Review(BaseModel):
    problems: list[Annotated[str, Field(max_length=300)]] = Field(
        max_length=8, description="Concrete problems; empty when every check passes.")
    passes: bool


@dataclass
class SynthesisReport:
    refine_rounds: dict[str, int] = field(default_factory=dict)
    rejected_as_unoriginal: list[str] = field(default_factory=list)
    failed_steps: list[str] = field(default_factory=list)


class SynthesisFailed(Exception):
    """A step produced no usable output after its retries; the report says which."""


# -- originality ---------------------------------------------------------------------------------
class OriginalityIndex:
    """Known characters (starter set, pool): names for fuzzy matching, profiles for BM25."""

    def __init__(self, known: list[tuple[str, str]]) -> None:
        self.names = [n for n, _ in known]
        self.index = BM25Index([t for _, t in known])

    def too_close(self, name: str, text: str) -> str | None:
        """The known character this one is too close to, or None."""
        for known in self.names:
            if fuzz.WRatio(name.lower(), known.lower()) >= NAME_SIMILARITY_LIMIT:
                return known
        if len(self.index):
            best = self.index.top(text, 1)[0]
            # Compared with the known profile's score against itself: a share near 1 means a near copy.
            if self.index.self_share(text, best) >= BM25_SHARE_LIMIT:
                return self.names[best]
        return None


def profile_text(p: ProfileDraft) -> str:
    return " ".join(str(v) for v in p.model_dump().values())


# -- steps ---------------------------------------------------------------------------------------
async def _ask(gateway: Model, role: str, template: str, language: str, schema: type[T], tag: str,
               sample_index: int = 0, **variables: Any) -> T:
    text = prompts.render(template, language, **variables).text
    request: Request[T] = Request(role, [{"role": "user", "content": text}], schema=schema,
                                  sample_index=sample_index, tag=tag)
    result = await gateway.run(request)
    if not result.ok:
        raise SynthesisFailed(f"{tag}: {result.error}")
    return result.parsed


async def _refined(gateway: Model, cfg: SynthesisConfig, report: SynthesisReport, step: str, draft: T,
                   context: str, checks: str, tag: str) -> T:
    """Review the draft against the checks; revise until it passes or the rounds run out."""
    for round_ in range(cfg.max_refine):
        review = await _ask(gateway, "synthesizer", "furina/synth/review", cfg.language, Review,
                            f"{tag}:review{round_}",
                            step=step, context=context, draft=draft.model_dump_json(), checks=checks)
        report.refine_rounds[step] = round_ + (0 if review.passes and not review.problems else 1)
        if review.passes and not review.problems:
            break
        draft = await _ask(gateway, "synthesizer", "furina/synth/revise", cfg.language, type(draft),
                           f"{tag}:revise{round_}", step=step, context=context, draft=draft.model_dump_json(),
                           problems=review.problems, schema_hint=json.dumps(type(draft).model_json_schema()))
    return draft


async def synthesize(gateway: Model, cfg: SynthesisConfig, index: OriginalityIndex, run_id: str = "s0",
                     on_step: Callable[[str], None] | None = None,
                     ) -> tuple[list[Character], Scene, SynthesisReport]:
    """One world with ``cfg.n_characters`` characters, a scene and its dialogue; ``on_step`` hears of each step done."""
    report = SynthesisReport()
    lang = cfg.language

    def done(step: str) -> None:
        if on_step is not None:
            on_step(step)
    seeds: list[str] = []
    for k, role in enumerate(cfg.seed_roles):
        got = await _ask(gateway, role, "furina/synth/seeds", lang, Seeds, f"{run_id}:seeds:{role}", sample_index=k)
        seeds += [t for t in got.themes if t not in seeds]
    done(f"themes: {', '.join(seeds)}")

    world = await _ask(gateway, "synthesizer", "furina/synth/worldview", lang, Worldview, f"{run_id}:world",
                       themes=seeds)
    world = await _refined(gateway, cfg, report, "worldview", world, f"Themes: {', '.join(seeds)}",
                           "consistent with the themes; original (no existing fictional world); fluent",
                           f"{run_id}:world")
    done(f"world: {world.name}")

    cast: list[ProfileDraft] = []
    attempt = 0
    while len(cast) < cfg.n_characters:
        if attempt > cfg.n_characters + cfg.max_originality_retries:
            report.failed_steps.append("cast")
            raise SynthesisFailed(f"{run_id}: could not find {cfg.n_characters} original characters")
        proposed = await _ask(gateway, "synthesizer", "furina/synth/cast", lang, Cast, f"{run_id}:cast{attempt}",
                              world=world.description, n=cfg.n_characters - len(cast),
                              taken=[p.name for p in cast] + report.rejected_as_unoriginal)
        for p in proposed.characters:
            clash = index.too_close(p.name, profile_text(p))
            if clash is not None or any(p.name == c.name for c in cast):
                report.rejected_as_unoriginal.append(p.name)
                continue
            p = await _refined(gateway, cfg, report, "profile", p, world.description,
                               "consistent with the world; original; memories and experiences explain the "
                               "persona; fluent",
                               f"{run_id}:profile:{p.name}")
            cast.append(p)
            done(f"character {len(cast)}/{cfg.n_characters}: {p.name}")
            if len(cast) == cfg.n_characters:
                break
        attempt += 1

    names = [p.name for p in cast]
    scene = await _ask(gateway, "synthesizer", "furina/synth/scene", lang, scene_schema(names), f"{run_id}:scene",
                       world=world.description, profiles=[p.model_dump() for p in cast])
    scene = await _refined(gateway, cfg, report, "scene", scene, world.description,
                           f"uses only these characters: {', '.join(names)}; one first-person motivation each; fluent",
                           f"{run_id}:scene")
    done(f"scene with {', '.join(scene.characters)}")
    dialogue = await _ask(gateway, "synthesizer", "furina/synth/dialogue", lang,
                          dialogue_schema(list(scene.characters)),
                          f"{run_id}:dialogue",
                          world=world.description, situation=scene.situation, participants=scene.participants)
    dialogue = await _refined(gateway, cfg, report, "dialogue", dialogue, scene.situation,
                              f"only these speakers: {', '.join(scene.characters)}; in character; natural; fluent",
                              f"{run_id}:dialogue")
    done(f"dialogue of {len(dialogue.lines)} lines")
    return _characters(cast, lang, world), _scene(run_id, world, scene, dialogue, cast, lang), report


def _attributes(p: ProfileDraft) -> list[Attribute]:
    private = PRIVATE_BY_DEFAULT | {"memories", "formative_experiences", "beliefs"}
    return [Attribute(key=k, value=str(v).strip(), visibility="private" if k in private else "public")
            for k, v in p.model_dump().items() if k != "name" and str(v).strip()]


def _characters(cast: list[ProfileDraft], lang: str, world: Worldview) -> list[Character]:
    return [Character(name=p.name, language=lang, type="synthesized", source=f"rpbench synthesis: {world.name}",
                      attributes=_attributes(p)) for p in cast]


def _scene(run_id: str, world: Worldview, scene: SceneDraft, dialogue: DialogueDraft, cast: list[ProfileDraft],
           lang: str) -> Scene:
    by_name = {p.name: p for p in cast}
    speakers = list(dict.fromkeys(ln.speaker for ln in dialogue.lines))
    motivations = {p.name: p.motivation for p in scene.participants}
    strangers = [n for n in speakers if n not in by_name or not motivations.get(n)]
    if len(speakers) < 2 or strangers:
        # No invented profile or placeholder motivation: the scene is reported as failed instead.
        raise SynthesisFailed(f"{run_id}: dialogue speakers without a profile or motivation: {strangers or speakers}")
    characters = [SceneCharacter(name=n, motivation=motivations[n], profile=_attributes(by_name[n])) for n in speakers]
    return Scene(scene_id=f"synth-{run_id}", book_id=f"synth-{world.name}", language=lang,
                     summary=scene.situation[:300], background=world.description, situation=scene.situation,
                     original_dialogue=[Line(speaker=ln.speaker, text=ln.text) for ln in dialogue.lines],
                     characters=characters, source="synthesized")
