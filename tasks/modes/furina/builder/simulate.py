"""One simulated dialogue: director turns, scene characters, test turns judged between source and base."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

from rpbench.tasks.modes.furina.builder.dwrs import DIMENSIONS, dwrs_choose
from rpbench.tasks.modes.furina.builder.rules import rule_flags
from rpbench.tasks.modes.furina.builder.turns import (
    END,
    DialogueGrade,
    director_request,
    grade_request,
    scene_turn_request,
    selection_request,
    test_turn_messages,
)
from rpbench.tasks.modes.furina.characters.schema import Character
from rpbench.tasks.llm import Gateway, Request
from rpbench.tasks.modes.furina.pool.models import PoolScene


@dataclass(frozen=True)
class BuildConfig:
    tau: int = 10
    min_rounds: int = 6
    max_rounds: int = 20
    max_test_gap: int = 3  # the test character speaks at least once every this many turns
    max_dialogues_per_character: int = 40
    keep_sigma_at_most: int = 3  # sigma <= this: the source reply enters the history
    item_sigma_below: int = 3  # sigma < this: the turn becomes a benchmark item
    keep_grades: tuple[str, ...] = ("high",)
    test_sees_scene_extras: bool = False
    same_language: bool = True
    concurrency: int = 8
    seed: int = 0
    sources: tuple[str, ...] = ("source",)


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
    scene: PoolScene
    source_role: str
    turns: list[Turn] = field(default_factory=list)
    grade: str | None = None
    grade_reason: str | None = None
    counted: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)

    def history(self, upto: int | None = None) -> list[dict[str, str]]:
        return [{"speaker": t.speaker, "text": t.text} for t in self.turns[:upto]]


def _fail(d: Dialogue, kind: str) -> None:
    d.failures[kind] = d.failures.get(kind, 0) + 1


def fallback_speaker(roster: list[str], turns: list[Turn], test_name: str) -> str:
    """Recorded fallback when the director fails: the test character if it is owed a turn, else the next in order."""
    last = turns[-1].speaker if turns else None
    if last != test_name:
        return test_name
    order = [n for n in roster if n != last]
    return order[len(turns) % len(order)]


async def simulate(gateway: Gateway, d: Dialogue, counts: dict[str, int], cfg: BuildConfig, rng: random.Random
                   ) -> Dialogue:
    """Run one dialogue. ``counts`` (this character's accepted items per dimension) steers DWRS and is updated."""
    test = d.character
    lang = d.scene.language
    scene_chars = [c for c in d.scene.characters if c.name != test.name]
    roster = [test.name, *[c.name for c in scene_chars]]
    since_test = 0
    for r in range(cfg.max_rounds):
        tag = f"{d.dialogue_id}:{r}"
        if since_test >= cfg.max_test_gap:
            speaker, how = test.name, "forced"
        else:
            res = await gateway.run(director_request(d.scene, roster, d.history(), lang, f"{tag}:director",
                                                     cfg.min_rounds - r))
            if res.ok:
                speaker, how = res.parsed.next, "model"
            else:
                _fail(d, "director")
                speaker, how = fallback_speaker(roster, d.turns, test.name), "fallback"
            if speaker == END:
                if r >= cfg.min_rounds:
                    break
                speaker, how = fallback_speaker(roster, d.turns, test.name), "fallback"
        target = DIMENSIONS[dwrs_choose([counts[x] for x in DIMENSIONS], rng)]
        if speaker != test.name:
            me = next(c for c in scene_chars if c.name == speaker)
            others: list[Any] = [test, *[c for c in scene_chars if c.name != speaker]]
            res = await gateway.run(scene_turn_request(d.scene, me, others, d.history(), test.name, target, lang,
                                                       f"{tag}:scene"))
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
        if turn.sigma is not None and turn.sigma < cfg.item_sigma_below and turn.dimension:
            counts[turn.dimension] += 1
            d.counted[turn.dimension] = d.counted.get(turn.dimension, 0) + 1
    grade = await gateway.run(grade_request(d.scene, d.history(), lang, f"{d.dialogue_id}:grade"))
    if grade.ok:
        parsed: DialogueGrade = grade.parsed
        d.grade, d.grade_reason = parsed.grade, parsed.reason
    else:
        _fail(d, "grade")
        d.grade, d.grade_reason = "ungraded", grade.error
    if d.grade not in cfg.keep_grades:
        for dim, n in d.counted.items():  # its turns will not become items: give the counts back
            counts[dim] -= n
    return d


async def _test_turn(gateway: Gateway, d: Dialogue, scene_chars: list, target: str, cfg: BuildConfig, tag: str
                     ) -> Turn | None:
    lang = d.scene.language
    messages = test_turn_messages(d.scene, d.character, scene_chars, d.history(), target, lang,
                                  cfg.test_sees_scene_extras)
    src, base = await asyncio.gather(
        gateway.run(Request(d.source_role, messages, tag=f"{tag}:source")),
        gateway.run(Request("base", messages, tag=f"{tag}:base")),
    )
    if not src.ok and not base.ok:
        _fail(d, "test_turn")
        return None
    if not src.ok or not base.ok:
        # Only one candidate: it enters the history, but with nothing to compare it is no item.
        _fail(d, "source" if not src.ok else "base")
        text = (src if src.ok else base).text.strip()
        return Turn(0, d.character.name, text, is_test=True, target_dimension=target,
                    source_reply=src.text if src.ok else None, base_reply=base.text if base.ok else None,
                    source_role=d.source_role, judge_status="one_candidate")
    verdict = await gateway.run(selection_request(d.scene, d.character, d.history(), src.text.strip(),
                                                  base.text.strip(), lang, f"{tag}:judge"))
    if not verdict.ok:
        _fail(d, "judge")
        return Turn(0, d.character.name, base.text.strip(), is_test=True, target_dimension=target,
                    source_reply=src.text.strip(), base_reply=base.text.strip(), source_role=d.source_role,
                    judge_status="failed", rationale=verdict.error)
    v = verdict.parsed
    winner = src.text.strip() if v.sigma <= cfg.keep_sigma_at_most else base.text.strip()
    return Turn(0, d.character.name, winner, is_test=True, target_dimension=target, source_reply=src.text.strip(),
                base_reply=base.text.strip(), source_role=d.source_role, sigma=v.sigma, dimension=v.dimension,
                rationale=v.reasoning, judge_status="ok")


def dialogue_rows(d: Dialogue) -> list[dict[str, Any]]:
    return [
        {"dialogue_id": d.dialogue_id, "character": d.character.name, "scene_id": d.scene.scene_id,
         "turn": t.index, "speaker": t.speaker, "text": t.text, "is_test": t.is_test,
         "target_dimension": t.target_dimension, "source_reply": t.source_reply, "base_reply": t.base_reply,
         "source_model": t.source_role, "sigma": t.sigma, "dimension": t.dimension, "rationale": t.rationale,
         "judge_status": t.judge_status, "director": t.director, "grade": d.grade}
        for t in d.turns
    ]


def item_rows(d: Dialogue, cfg: BuildConfig, source_models: dict[str, str]) -> list[dict[str, Any]]:
    """Test turns the source won (sigma below the threshold) in a dialogue whose grade is kept."""
    if d.grade not in cfg.keep_grades:
        return []
    rows = []
    names = [d.character.name, *[c.name for c in d.scene.characters]]
    for i, t in enumerate(d.turns):
        if not (t.is_test and t.sigma is not None and t.sigma < cfg.item_sigma_below and t.dimension):
            continue
        history = d.history(i)
        rows.append({
            "item_id": f"{d.dialogue_id}-t{t.index}", "character": d.character.name,
            "character_type": d.character.type, "language": d.scene.language, "scene_id": d.scene.scene_id,
            "dialogue_id": d.dialogue_id, "dimension": t.dimension, "history": history,
            "test_utterance": t.source_reply, "base_utterance": t.base_reply,
            "source_model": source_models.get(t.source_role or "", t.source_role), "sigma": t.sigma,
            "flags": rule_flags(t.source_reply or "", d.character.name, names, d.scene.language,
                                [h["text"] for h in history]),
        })
    return rows
