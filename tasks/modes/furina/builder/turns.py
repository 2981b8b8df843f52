"""Prompts and structured outputs of one simulated dialogue: director, scene character, test character, judge.

Visibility rules (FURINA section 3.3): a scene character sees the background,
its own full profile, P_pub of everyone else, the history, its motivation and
the original dialogue. The test character sees the background, its own full
profile, P_pub of the scene characters and the history - never another
character's private attributes, motivations or the original dialogue, unless
``test_sees_scene_extras`` is set (appendix C's richer prompt).
"""

from __future__ import annotations

import functools
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from rpbench import prompts
from rpbench.tasks.llm import Request
from rpbench.tasks.llm.structured import REASONING
from rpbench.tasks.modes.furina.characters.profile import full_profile, public_profiles
from rpbench.tasks.modes.furina.dimensions import DIMENSIONS, Dimension
from rpbench.tasks.modes.furina.domain import Character, Line, Scene, SceneCharacter

END = "END"
REASONING_CAP = 8000  # characters of free-text reasoning a structured reply may hold, unless a role says less


class SelectionVerdict(BaseModel):
    """The judge reasons first, then names the dimension the turn tests, then scores source (A) vs base (B)."""

    # Generous: real judges write long reasoning. A role's reasoning_chars shortens it (the small local model).
    reasoning: str = Field(max_length=REASONING_CAP, json_schema_extra=REASONING)
    dimension: Dimension
    sigma: Literal[1, 2, 3, 4, 5]


class DialogueGrade(BaseModel):
    reason: str = Field(max_length=REASONING_CAP, json_schema_extra=REASONING)
    grade: Literal["poor", "moderate", "high"]


def director_schema(roster: list[str], may_end: bool = True) -> type[BaseModel]:
    """A schema whose `next` can only be someone on the roster, or END once the scene may end (a model held to
    the schema cannot end it before the minimum rounds; a plan's shortest pass ends it at the first round it may)."""
    choice = Literal[tuple([*roster, END] if may_end else roster)]  # type: ignore[valid-type]
    return create_model("DirectorChoice", reason=(str, Field(max_length=REASONING_CAP, json_schema_extra=REASONING)),
                        next=(choice, ...))  # type: ignore[arg-type]


def history_lines(history: list[Line]) -> list[str]:
    return [f"{t.speaker}: {t.text}" for t in history]


def dimension_text(kind: str, dim: str, language: str, **extra: Any) -> str:
    return prompts.render(f"furina/dims/{kind}", language, dim=dim, **extra).text


def director_request(scene: Scene, roster: list[str], history: list[Line], language: str,
                     tag: str, min_left: int) -> Request[Any]:
    text = prompts.render(
        "furina/builder/director", language, background=scene.background, situation=scene.situation, roster=roster,
        history=history_lines(history), may_end=min_left <= 0,
    ).text
    return Request("director", [{"role": "user", "content": text}], schema=director_schema(roster, min_left <= 0),
                   tag=tag)


def scene_turn_request(scene: Scene, me: SceneCharacter, others: list[Character | SceneCharacter],
                       history: list[Line], test_name: str, dim: str, language: str, tag: str) -> Request[None]:
    text = prompts.render(
        "furina/builder/scene_turn", language, background=scene.background, situation=scene.situation, name=me.name,
        my_profile=full_profile(me, language), others=public_profiles(others, language),
        motivation=me.motivation, original=history_lines(scene.original_dialogue),
        history=history_lines(history), instruction=dimension_text("question", dim, language, target=test_name),
    ).text
    return Request("scene", [{"role": "user", "content": text}], tag=tag)


def test_view(scene: Scene, test: Character, scene_chars: list[SceneCharacter], history: list[Line], dim: str,
              language: str, extras: bool) -> dict[str, Any]:
    """Everything the test character is shown at a turn: Prompt(c_test) plus S(d).

    The evaluation judge is shown the same, so it judges a reply against what its writer knew.
    """
    return {
        "background": scene.background, "situation": scene.situation, "name": test.name,
        "my_profile": full_profile(test, language), "others": public_profiles(scene_chars, language),
        "history": history_lines(history), "strategy": dimension_text("strategy", dim, language),
        "motivations": [f"{c.name}: {c.motivation}" for c in scene_chars] if extras else [],
        "original": history_lines(scene.original_dialogue) if extras else [],
    }


def test_turn_messages(scene: Scene, test: Character, scene_chars: list[SceneCharacter],
                       history: list[Line], dim: str, language: str, extras: bool) -> list[dict[str, str]]:
    """The test character's prompt: shared by the builder's source/base calls and by evaluation."""
    view = test_view(scene, test, scene_chars, history, dim, language, extras)
    return [{"role": "user", "content": prompts.render("furina/builder/test_turn", language, **view).text}]


def selection_request(scene: Scene, test: Character, history: list[Line], source: str, base: str,
                      language: str, tag: str, target: str | None = None) -> Request[SelectionVerdict]:
    """The judge's choice of dimension and its verdict; with ``target`` (``dimension_by = "target"``) the
    dimension is given, the schema admits only it, and the judge only scores."""
    text = prompts.render(
        "furina/builder/select", language, background=scene.background, name=test.name,
        profile=full_profile(test, language), history=history_lines(history), reply_a=source, reply_b=base,
        definitions=[dimension_text("definition", d, language) for d in DIMENSIONS], target=target,
    ).text
    schema = SelectionVerdict if target is None else _given_dimension(target)
    return Request("judge", [{"role": "user", "content": text}], schema=schema, tag=tag)


@functools.lru_cache(maxsize=len(DIMENSIONS))
def _given_dimension(target: str) -> type[SelectionVerdict]:
    return create_model("SelectionVerdict", __base__=SelectionVerdict, __doc__=SelectionVerdict.__doc__,
                        dimension=(Literal[target], ...))  # type: ignore[arg-type]


def grade_request(scene: Scene, history: list[Line], language: str, tag: str) -> Request[DialogueGrade]:
    text = prompts.render("furina/builder/grade", language, situation=scene.situation,
                          history=history_lines(history)).text
    return Request("judge", [{"role": "user", "content": text}], schema=DialogueGrade, tag=tag)
