"""One simulated dialogue: director turns, scene characters, test turns judged between source and base.

Grading the finished dialogue is a step of its own (``grade``), run after a
wave of dialogues, as FURINA's post-processing does (appendix G).
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass, field
from typing import Any

from rpbench.tasks.llm import CallResult, Model, Request
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
from rpbench.tasks.modes.furina.domain import Character, Line, Scene, SceneCharacter
from rpbench.tasks.modes.furina.records import DialogueTurn, Grade


@dataclass
class Turn:
    index: int
    speaker: str
    text: str
    is_test: bool = False
    target_dimension: str | None = None
    exchange: int = 0  # turns up to and including the test character's reply share one exchange and one target
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
    selected: dict[str, int] = field(default_factory=dict)  # this dialogue's DWRS selections per dimension
    failures: dict[str, int] = field(default_factory=dict)

    def history(self, upto: int | None = None) -> list[Line]:
        """What the characters see of the conversation: each turn as spoken, inner thoughts taken out."""
        return [Line(speaker=t.speaker, text=spoken_part(t.text)) for t in self.turns[:upto]]


# Unspoken thoughts, written as [...] or 【...】 (the pool keeps them so in the book's dialogue). A scene model
# may copy the style into its own turn; nobody else in the scene can hear them, so nobody else is shown them.
_THOUGHTS = re.compile(r"\[[^\[\]]*\]|【[^【】]*】")


def spoken_part(text: str) -> str:
    """A turn as the other characters perceive it: actions and speech, without bracketed inner thoughts."""
    return " ".join(_THOUGHTS.sub(" ", text).split())


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


async def _next_speaker(gateway: Model, d: Dialogue, roster: list[str], r: int, since_test: int,
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


async def simulate(gateway: Model, d: Dialogue, selected: dict[str, int], cfg: BuildConfig,
                   rng: random.Random) -> Dialogue:
    """Run one dialogue.

    An exchange runs from the turn after the test character's last reply up to
    and including its next one. Its target dimension d is drawn once, when the
    exchange opens, by DWRS over the selection counts (Algorithm 1 counts every
    selection), so the scene characters' question instruction I(d) and the test
    character's reply strategy S(d) name the same d (appendix C). ``selected``
    is the character's selection counts when the wave started, plus this
    dialogue's own: a snapshot, not a count shared with dialogues running beside
    this one, so the same inputs give the same dialogue whatever the timing. The
    stop rule (tau) counts accepted items instead; see ``kept_counts``.
    """
    test = d.character
    scene_chars = [c for c in d.scene.characters if c.name != test.name]
    roster = [test.name, *[c.name for c in scene_chars]]
    since_test, exchange = 0, 0
    target: str | None = None
    for r in range(cfg.max_rounds):
        tag = f"{d.dialogue_id}:{r}"
        speaker, how = await _next_speaker(gateway, d, roster, r, since_test, cfg, tag)
        if speaker is None:
            break
        if target is None:
            target = DIMENSIONS[dwrs_choose([selected.get(x, 0) + d.selected.get(x, 0) for x in DIMENSIONS], rng)]
            d.selected[target] = d.selected.get(target, 0) + 1
        if speaker != test.name:
            me = next(c for c in scene_chars if c.name == speaker)
            others: list[Character | SceneCharacter] = [test, *[c for c in scene_chars if c.name != speaker]]
            res = await gateway.run(scene_turn_request(d.scene, me, others, d.history(), test.name, target,
                                                       d.scene.language, f"{tag}:scene"))
            if not res.ok:
                _fail(d, "scene_turn")
                break  # a hole in the conversation would corrupt every later prompt
            d.turns.append(Turn(r, speaker, res.text.strip(), target_dimension=target, exchange=exchange,
                                director=how))
            since_test += 1
            continue
        since_test = 0
        turn = await _test_turn(gateway, d, scene_chars, target, cfg, f"{tag}:test")
        if turn is None:
            break
        turn.index, turn.director, turn.exchange = r, how, exchange
        d.turns.append(turn)
        target, exchange = None, exchange + 1
    return d


async def _test_turn(gateway: Model, d: Dialogue, scene_chars: list[SceneCharacter], target: str,
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
                                                  f"{tag}:judge", target if cfg.dimension_by == "target" else None))
    if not verdict.ok:
        _fail(d, "judge")
        return Turn(0, d.character.name, base_text, source_reply=source_text, base_reply=base_text,
                    judge_status="failed", rationale=verdict.error, **common)
    v = verdict.parsed
    winner = source_text if v.sigma <= cfg.keep_sigma_at_most else base_text
    return Turn(0, d.character.name, winner, source_reply=source_text, base_reply=base_text, sigma=v.sigma,
                dimension=v.dimension, rationale=v.reasoning, judge_status="ok", **common)


async def grade(gateway: Model, dialogue_id: str, character: str, scene: Scene, history: list[Line]) -> Grade:
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
                     exchange=t.exchange, grade=None)
        for t in d.turns
    ]
