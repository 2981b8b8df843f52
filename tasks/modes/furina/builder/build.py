"""Build a benchmark: simulate dialogues per test character until every dimension has tau kept items.

A character's dialogues run in waves: a wave starts up to ``wave_size``
dialogues from the same snapshot of the character's kept items, they run at
once, then they are graded, and the kept counts decide whether another wave is
needed. The stop rule (every dimension has tau items) and the budget are
checked between waves, so the same inputs and seed give the same dialogues
whatever the timing. A character whose budget runs out is reported with its
coverage, not hidden. The Prefect flow runs each wave's simulation and grading
as stage tasks; ``build_benchmark`` runs the same steps in memory.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm import Model
from rpbench.tasks.modes.furina.builder.dwrs import DIMENSIONS, covered
from rpbench.tasks.modes.furina.builder.rules import rule_flags
from rpbench.tasks.modes.furina.builder.simulate import (
    BuildConfig,
    Dialogue,
    grade,
    is_item,
    simulate,
    spoken_part,
    turn_records,
)
from rpbench.tasks.modes.furina.domain import Character, Item, Line, Scene
from rpbench.tasks.modes.furina.records import DialogueTurn, Grade

OnDone = Callable[[int, int], Any] | None


def slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name).strip("-").lower() or "c"


def scene_queue(character: Character, scenes: Sequence[Scene], cfg: BuildConfig) -> list[Scene]:
    """Scenes for one character in a seeded order of its own: same language by default, never one it is in
    (a character dropped into its own scene would meet itself, and its book's lines)."""
    me = character.name.casefold()
    usable = [s for s in scenes if (not cfg.same_language or s.language == character.language)
              and all(c.name.casefold() != me for c in s.characters) and s.characters]
    if not usable:
        raise InputError(f"no pool scene fits character {character.name} (language {character.language})")
    random.Random(f"{cfg.seed}:{character.name}").shuffle(usable)
    return usable


def plan_wave(character: Character, queue: Sequence[Scene], cfg: BuildConfig, started: int,
              kept: dict[str, int]) -> list[Dialogue]:
    """The character's next wave: nothing once covered or out of budget, else up to ``wave_size`` dialogues."""
    budget_left = cfg.max_dialogues_per_character - started
    if covered([kept.get(d, 0) for d in DIMENSIONS], cfg.tau) or budget_left <= 0:
        return []
    return [Dialogue(f"{slug(character.name)}-d{k}", character, queue[k % len(queue)],
                     cfg.sources[k % len(cfg.sources)])
            for k in range(started, started + min(cfg.wave_size, budget_left))]


async def simulate_wave(gateway: Model, wave: list[Dialogue], selected: dict[str, int], cfg: BuildConfig,
                        on_done: OnDone = None) -> list[Dialogue]:
    """Every dialogue of a wave at once, each from the same snapshot of the character's DWRS selection counts
    and with its own seeded generator."""
    snapshot = {d: selected.get(d, 0) for d in DIMENSIONS}
    finished = 0

    async def one(d: Dialogue) -> Dialogue:
        nonlocal finished
        out = await simulate(gateway, d, snapshot, cfg, random.Random(f"{cfg.seed}:{d.dialogue_id}"))
        finished += 1
        if on_done is not None:
            on_done(finished, len(wave))
        return out

    return list(await asyncio.gather(*(one(d) for d in wave)))


async def grade_wave(gateway: Model, turns: Sequence[DialogueTurn], scenes: dict[str, Scene],
                     on_done: OnDone = None) -> list[Grade]:
    """Grade every dialogue in ``turns`` (in order of first appearance)."""
    by_dialogue: dict[str, list[DialogueTurn]] = {}
    for t in turns:
        by_dialogue.setdefault(t.dialogue_id, []).append(t)
    finished = 0

    async def one(rows: list[DialogueTurn]) -> Grade:
        nonlocal finished
        first = rows[0]
        out = await grade(gateway, first.dialogue_id, first.character, scenes[first.scene_id],
                          [_line(t) for t in rows])
        finished += 1
        if on_done is not None:
            on_done(finished, len(by_dialogue))
        return out

    return list(await asyncio.gather(*(one(rows) for rows in by_dialogue.values())))


def _line(turn: DialogueTurn) -> Line:
    return Line(speaker=turn.speaker, text=turn.text)


def selection_counts(turns: Sequence[DialogueTurn]) -> dict[str, int]:
    """DWRS selections per dimension: one per exchange (Algorithm 1's counter, which steers the next draws)."""
    exchanges = {(t.dialogue_id, t.exchange): t.target_dimension for t in turns if t.target_dimension}
    counts = Counter(exchanges.values())
    return {d: counts.get(d, 0) for d in DIMENSIONS}


def kept_counts(turns: Sequence[DialogueTurn], grades: Sequence[Grade], cfg: BuildConfig) -> dict[str, int]:
    """Items per dimension in the dialogues whose grade is kept: what the stop rule counts."""
    kept = {g.dialogue_id for g in grades if g.grade in cfg.keep_grades}
    counts = Counter(t.dimension for t in turns if t.dialogue_id in kept and is_item(t, cfg) and t.dimension)
    return {d: counts.get(d, 0) for d in DIMENSIONS}


def item_records(turns: Sequence[DialogueTurn], grades: Sequence[Grade], characters: dict[str, Character],
                 scenes: dict[str, Scene], cfg: BuildConfig, source_models: dict[str, str]) -> list[Item]:
    """Test turns the source won (sigma below the threshold) in dialogues whose grade is kept."""
    kept = {g.dialogue_id for g in grades if g.grade in cfg.keep_grades}
    items: list[Item] = []
    history: dict[str, list[DialogueTurn]] = {}
    for t in turns:
        earlier = history.setdefault(t.dialogue_id, [])
        if t.dialogue_id in kept and is_item(t, cfg):
            character, scene = characters[t.character], scenes[t.scene_id]
            names = [character.name, *[c.name for c in scene.characters]]
            lines = [Line(speaker=h.speaker, text=spoken_part(h.text)) for h in earlier]
            source = t.source_reply or ""
            items.append(Item(
                item_id=f"{t.dialogue_id}-t{t.turn}", character=character.name, character_type=character.type,
                language=scene.language, scene_id=scene.scene_id, dialogue_id=t.dialogue_id,
                dimension=t.dimension or "", history=lines, test_utterance=source, base_utterance=t.base_reply or "",
                source_model=source_models.get(t.source_role or "", t.source_role or ""), sigma=t.sigma or 0,
                flags=rule_flags(source, character.name, names, scene.language, [h.text for h in lines]),
            ))
        earlier.append(t)
    return items


@dataclass
class BuildResult:
    turns: list[DialogueTurn]
    grades: list[Grade]
    items: list[Item]
    coverage: dict[str, dict[str, int]]
    budget_exhausted: list[str]
    failures: dict[str, int]


async def build_benchmark(gateway: Model, characters: list[Character], scenes: list[Scene], cfg: BuildConfig,
                          on_dialogue: OnDone = None) -> BuildResult:
    """The whole build in memory: characters side by side, each in waves until covered or out of budget."""
    turns: list[DialogueTurn] = []
    grades: list[Grade] = []
    failures: Counter[str] = Counter()
    coverage: dict[str, dict[str, int]] = {}
    by_id = {s.scene_id: s for s in scenes}

    async def one_character(ch: Character) -> None:
        queue = scene_queue(ch, scenes, cfg)
        kept = dict.fromkeys(DIMENSIONS, 0)
        selected = dict.fromkeys(DIMENSIONS, 0)
        started = 0
        while wave := plan_wave(ch, queue, cfg, started, kept):
            done = await simulate_wave(gateway, wave, selected, cfg)
            started += len(wave)
            wave_turns = [t for d in done for t in turn_records(d)]
            selected = {d: selected[d] + n for d, n in selection_counts(wave_turns).items()}
            wave_grades = await grade_wave(gateway, wave_turns, by_id)
            for d in done:
                failures.update(d.failures)
            failures.update("grade" for g in wave_grades if g.status == "failed")
            turns.extend(wave_turns)
            grades.extend(wave_grades)
            kept = {d: kept[d] + n for d, n in kept_counts(wave_turns, wave_grades, cfg).items()}
            if on_dialogue is not None:
                on_dialogue(len(grades), len(characters) * cfg.max_dialogues_per_character)
        coverage[ch.name] = kept

    await asyncio.gather(*(one_character(c) for c in characters))
    return finish_build(turns, grades, characters, scenes, cfg, coverage, dict(failures),
                        {role: gateway.model_of(role) for role in cfg.sources})


def finish_build(turns: list[DialogueTurn], grades: list[Grade], characters: list[Character], scenes: list[Scene],
                 cfg: BuildConfig, coverage: dict[str, dict[str, int]], failures: dict[str, int],
                 source_models: dict[str, str]) -> BuildResult:
    """Dialogues in a stable order, each turn carrying its dialogue's grade, and the items they give."""
    order = {c.name: i for i, c in enumerate(characters)}

    def key(t: DialogueTurn) -> tuple[int, int, int]:
        return order[t.character], int(t.dialogue_id.rsplit("-d", 1)[1]), t.turn

    grade_of = {g.dialogue_id: g.grade for g in grades}
    turns = sorted((t.model_copy(update={"grade": grade_of.get(t.dialogue_id)}) for t in turns), key=key)
    grades = sorted(grades, key=lambda g: (order[g.character], int(g.dialogue_id.rsplit("-d", 1)[1])))
    items = item_records(turns, grades, {c.name: c for c in characters}, {s.scene_id: s for s in scenes}, cfg,
                         source_models)
    exhausted = [c.name for c in characters if not covered(list(coverage[c.name].values()), cfg.tau)]
    return BuildResult(turns, grades, items, {c.name: coverage[c.name] for c in characters}, exhausted, failures)


def build_stats(result: BuildResult, characters: list[Character], scenes: list[Scene],
                keep_grades: tuple[str, ...] = ("high",)) -> list[dict[str, Any]]:
    """Appendix I: per language (and overall) characters, conversations, lengths, items, items per dimension.

    Lengths and items per conversation are over the kept conversations, the ones the benchmark is made of.
    """
    by_scene = {s.scene_id: s for s in scenes}
    dialogues: dict[str, list[DialogueTurn]] = {}
    for t in result.turns:
        dialogues.setdefault(t.dialogue_id, []).append(t)
    grade_of = {g.dialogue_id: g.grade for g in result.grades}
    rows = []
    for lang in [*sorted({c.language for c in characters}), "all"]:
        mine = {k: v for k, v in dialogues.items() if lang in ("all", by_scene[v[0].scene_id].language)}
        kept = [k for k in mine if grade_of.get(k) in keep_grades]
        items = [i for i in result.items if lang in ("all", i.language)]
        chars = {v[0].character for v in mine.values()}
        unique = {c.name for v in mine.values() for c in by_scene[v[0].scene_id].characters} | chars
        per_dim = Counter(i.dimension for i in items)
        rows.append({
            "language": lang,
            "test_characters": len([c for c in characters if lang in ("all", c.language)]),
            "unique_characters": len(unique),
            "conversations": len(mine),
            "conversations_kept": len(kept),
            "mean_conversation_length": round(sum(len(mine[k]) for k in kept) / len(kept), 2) if kept else None,
            "items": len(items),
            "items_per_conversation": round(len(items) / len(kept), 2) if kept else None,
            **{f"items_{d}": per_dim.get(d, 0) for d in DIMENSIONS},
        })
    return rows


def source_model_counts(items: Sequence[Item]) -> list[dict[str, Any]]:
    """Appendix J: which source model wrote the accepted replies, per language and overall, with shares."""
    rows = []
    for lang in [*sorted({i.language for i in items}), "all"]:
        mine = Counter(i.source_model for i in items if lang in ("all", i.language))
        total = sum(mine.values())
        rows += [{"language": lang, "source_model": model, "items": n, "share": n / total}
                 for model, n in sorted(mine.items(), key=lambda kv: (-kv[1], kv[0]))]
    return rows
