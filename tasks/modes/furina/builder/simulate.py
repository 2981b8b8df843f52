"""One simulated dialogue: director turns, scene characters, test turns judged between source and base.

Grading the finished dialogue is a step of its own (``grade``), run after a
wave of dialogues, as FURINA's post-processing does (appendix G).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

from rpbench.tasks.core.records import Character, Line, Scene, SceneCharacter
from rpbench.tasks.llm import CallResult, Gateway, Request
from rpbench.tasks.modes.furina.builder.dwrs import DIMENSIONS, dwrs_choose
from rpbench.tasks.modes.furina.builder.turns import (
    END,
    director_request,
    grade_request,
    scene_turn_request,
    selection_request,
    test_turn_messages,
)
from rpbench.tasks.modes.furina.config import BuildConfig
from rpbench.tasks.modes.furina.records import DialogueTurn, Grade


@dataclass
class Turn:
    index: int
    speaker: str
    text: str
    is_test: bool = False
    target_dimension: str | None = None
    source_reply: str | None = None
    base_reply: str | None = None
    source_role: str | None = None
    sigma: int | None = None
    dimension: str | None = None
    rationale: str | None = None
    judge_status: str | None = None
    director: str = "model"  # model | fallback | forced


@dataclass
class Dialogue:
    dialogue_id: str
    character: Character
    scene: Scene
    source_role: str
    turns: list[Turn] = field(default_factory=list)
    accepted: dict[str, int] = field(default_factory=dict)  # this dialogue's items per dimension, before grading
    failures: dict[str, int] = field(default_factory=dict)

    def history(self, upto: int | None = None) -> list[Line]:
        return [Line(speaker=t.speaker, text=t.text) for t in self.turns[:upto]]


def _fail(d: Dialogue, kind: str) -> None:
    d.failures[kind] = d.failures.get(kind, 0) + 1


def fallback_speaker(roster: list[str], turns: list[Turn], test_name: str) -> str:
    """Recorded fallback when the director fails: the test character if it is owed a turn, else the next in order."""
    last = turns[-1].speaker if turns else None
    if last != test_name:
        return test_name
    order = [n for n in roster if n != last]
    return order[len(turns) % len(order)]


def is_item(turn: Turn | DialogueTurn, cfg: BuildConfig) -> bool:
    """A judged test turn the source won clearly enough to become a benchmark item."""
    return bool(turn.is_test and turn.sigma is not None and turn.sigma < cfg.item_sigma_below and turn.dimension)


async def _next_speaker(gateway: Gateway, d: Dialogue, roster: list[str], r: int, since_test: int,
                        cfg: BuildConfig, tag: str) -> tuple[str | None, str]:
    """Who speaks in round ``r`` and how it was decided; None when the director ends the scene."""
    test = d.character.name
    if since_test >= cfg.max_test_gap:
        return test, "forced"
    res = await gateway.run(director_request(d.scene, roster, d.history(), d.scene.language, f"{tag}:director",
                                             cfg.min_rounds - r))
    if not res.ok:
        _fail(d, "director")
        return fallback_speaker(roster, d.turns, test), "fallback"
    speaker: str = res.parsed.next
    if speaker != END:
        return speaker, "model"
    if r >= cfg.min_rounds:
        return None, "model"
    return fallback_speaker(roster, d.turns, test), "fallback"


async def simulate(gateway: Gateway, d: Dialogue, counts: dict[str, int], cfg: BuildConfig, rng: random.Random
                   ) -> Dialogue:
    """Run one dialogue.

    ``counts`` is the character's kept items per dimension when the dialogue's
    wave started; DWRS steers by it plus this dialogue's own accepted items. A
    snapshot, not a count shared with dialogues running beside this one, so the
    same inputs give the same dialogue whatever the timing.
    """
    test = d.character
    scene_chars = [c for c in d.scene.characters if c.name != test.name]
    roster = [test.name, *[c.name for c in scene_chars]]
    since_test = 0
    for r in range(cfg.max_rounds):
        tag = f"{d.dialogue_id}:{r}"
        speaker, how = await _next_speaker(gateway, d, roster, r, since_test, cfg, tag)
        if speaker is None:
            break
        target = DIMENSIONS[dwrs_choose([counts[x] + d.accepted.get(x, 0) for x in DIMENSIONS], rng)]
        if speaker != test.name:
            me = next(c for c in scene_chars if c.name == speaker)
            others: list[Character | SceneCharacter] = [test, *[c for c in scene_chars if c.name != speaker]]
            res = await gateway.run(scene_turn_request(d.scene, me, others, d.history(), test.name, target,
                                                       d.scene.language, f"{tag}:scene"))
            if not res.ok:
                _fail(d, "scene_turn")
                break  # a hole in the conversation would corrupt every later prompt
            d.turns.append(Turn(r, speaker, res.text.strip(), target_dimension=target, director=how))
            since_test += 1
            continue
        since_test = 0
        turn = await _test_turn(gateway, d, scene_chars, target, cfg, f"{tag}:test")
        if turn is None:
            break
        turn.index, turn.director = r, how
        d.turns.append(turn)
        if is_item(turn, cfg) and turn.dimension:
            d.accepted[turn.dimension] = d.accepted.get(turn.dimension, 0) + 1
    return d


async def _test_turn(gateway: Gateway, d: Dialogue, scene_chars: list[SceneCharacter], target: str,
                     cfg: BuildConfig, tag: str) -> Turn | None:
    lang = d.scene.language
    messages = test_turn_messages(d.scene, d.character, scene_chars, d.history(), target, lang,
                                  cfg.test_sees_scene_extras)
    src: CallResult[None]
    base: CallResult[None]
    src, base = await asyncio.gather(
        gateway.run(Request(d.source_role, messages, tag=f"{tag}:source")),
        gateway.run(Request("base", messages, tag=f"{tag}:base")),
    )
    common: dict[str, Any] = {"is_test": True, "target_dimension": target, "source_role": d.source_role}
    if not src.ok and not base.ok:
        _fail(d, "test_turn")
        return None
    if not src.ok or not base.ok:
        # Only one candidate: it enters the history, but with nothing to compare it is no item.
        _fail(d, "source" if not src.ok else "base")
        text = src.text.strip() if src.ok else base.text.strip() if base.ok else ""
        return Turn(0, d.character.name, text, source_reply=src.text if src.ok else None,
                    base_reply=base.text if base.ok else None, judge_status="one_candidate", **common)
    source_text, base_text = src.text.strip(), base.text.strip()
    verdict = await gateway.run(selection_request(d.scene, d.character, d.history(), source_text, base_text, lang,
                                                  f"{tag}:judge"))
    if not verdict.ok:
        _fail(d, "judge")
        return Turn(0, d.character.name, base_text, source_reply=source_text, base_reply=base_text,
                    judge_status="failed", rationale=verdict.error, **common)
    v = verdict.parsed
    winner = source_text if v.sigma <= cfg.keep_sigma_at_most else base_text
    return Turn(0, d.character.name, winner, source_reply=source_text, base_reply=base_text, sigma=v.sigma,
                dimension=v.dimension, rationale=v.reasoning, judge_status="ok", **common)


async def grade(gateway: Gateway, dialogue_id: str, character: str, scene: Scene, history: list[Line]) -> Grade:
    """The judge's grade of a finished dialogue (poor, moderate, high); a failed call is recorded, ungraded."""
    res = await gateway.run(grade_request(scene, history, scene.language, f"{dialogue_id}:grade"))
    if res.ok:
        return Grade(dialogue_id=dialogue_id, character=character, grade=res.parsed.grade,
                     reason=res.parsed.reason, status="ok")
    return Grade(dialogue_id=dialogue_id, character=character, grade="ungraded", reason=res.error, status="failed")


def turn_records(d: Dialogue) -> list[DialogueTurn]:
    return [
        DialogueTurn(dialogue_id=d.dialogue_id, character=d.character.name, scene_id=d.scene.scene_id, turn=t.index,
                     speaker=t.speaker, text=t.text, is_test=t.is_test, target_dimension=t.target_dimension,
                     source_reply=t.source_reply, base_reply=t.base_reply, source_role=t.source_role, sigma=t.sigma,
                     dimension=t.dimension, rationale=t.rationale, judge_status=t.judge_status, director=t.director,
                     grade=None)
        for t in d.turns
    ]
