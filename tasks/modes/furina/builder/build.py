"""Build a benchmark: simulate dialogues per test character until every dimension has tau items.

Dialogues run concurrently (at most ``concurrency`` at once); turns within a
dialogue are sequential. A character keeps getting new scenes until its
coverage is reached or its dialogue budget is spent; a character whose budget
runs out is reported with its coverage, not hidden.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from rpbench.tasks.modes.furina.builder.dwrs import DIMENSIONS, covered
from rpbench.tasks.modes.furina.builder.simulate import BuildConfig, Dialogue, dialogue_rows, item_rows, simulate
from rpbench.tasks.modes.furina.characters.schema import Character
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm import Gateway
from rpbench.tasks.modes.furina.pool.models import PoolScene


@dataclass
class BuildResult:
    dialogues: list[Dialogue]
    dialogue_rows: list[dict[str, Any]]
    items: list[dict[str, Any]]
    coverage: dict[str, dict[str, int]]
    budget_exhausted: list[str]
    failures: dict[str, int]


def scene_queue(character: Character, scenes: list[PoolScene], cfg: BuildConfig, rng: random.Random) -> list[PoolScene]:
    """Scenes for one character, shuffled with the seed: same language by default, never one it is already in."""
    usable = [s for s in scenes if (not cfg.same_language or s.language == character.language)
              and len([c for c in s.characters if c.name != character.name]) >= 1]
    if not usable:
        raise InputError(f"no pool scene fits character {character.name} (language {character.language})")
    rng.shuffle(usable)
    return usable


async def build_benchmark(gateway: Gateway, characters: list[Character], scenes: list[PoolScene], cfg: BuildConfig,
                          on_dialogue: Any = None) -> BuildResult:
    rng = random.Random(cfg.seed)
    counts = {c.name: dict.fromkeys(DIMENSIONS, 0) for c in characters}
    queues = {c.name: scene_queue(c, scenes, cfg, rng) for c in characters}
    started = Counter[str]()
    done: list[Dialogue] = []
    gate = asyncio.Semaphore(cfg.concurrency)
    running: set[asyncio.Task] = set()

    def next_dialogue(ch: Character) -> Dialogue | None:
        if covered(list(counts[ch.name].values()), cfg.tau) or started[ch.name] >= cfg.max_dialogues_per_character:
            return None
        k = started[ch.name]
        started[ch.name] += 1
        queue = queues[ch.name]
        source = cfg.sources[k % len(cfg.sources)]
        return Dialogue(f"{_slug(ch.name)}-d{k}", ch, queue[k % len(queue)], source)

    async def run(d: Dialogue) -> Dialogue:
        async with gate:
            # Each dialogue gets its own seeded generator: reruns make the same DWRS tie-breaks.
            return await simulate(gateway, d, counts[d.character.name], cfg, random.Random(f"{cfg.seed}:{d.dialogue_id}"))

    def launch_for(ch: Character) -> None:
        d = next_dialogue(ch)
        if d is not None:
            running.add(asyncio.create_task(run(d)))

    # Start one dialogue per character per free slot, then top up as dialogues finish.
    for _ in range(max(1, cfg.concurrency // max(1, len(characters)))):
        for ch in characters:
            launch_for(ch)
    while running:
        finished, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for task in finished:
            running.discard(task)
            d = task.result()
            done.append(d)
            if on_dialogue is not None:
                on_dialogue(len(done), d)
            launch_for(d.character)

    done.sort(key=lambda d: (d.character.name, int(d.dialogue_id.rsplit("-d", 1)[1])))
    sources = {role: gateway.config.for_role(role).model for role in cfg.sources}
    items = [row for d in done for row in item_rows(d, cfg, sources)]
    failures: Counter[str] = Counter()
    for d in done:
        failures.update(d.failures)
    exhausted = [c.name for c in characters if not covered(list(counts[c.name].values()), cfg.tau)]
    return BuildResult(done, [r for d in done for r in dialogue_rows(d)], items, counts, exhausted, dict(failures))


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name).strip("-").lower() or "c"


def build_stats(result: BuildResult, characters: list[Character], keep_grades: tuple[str, ...] = ("high",)
                ) -> list[dict[str, Any]]:
    """Appendix I: per language (and overall) characters, conversations, lengths, items, items per dimension."""
    by_name = {c.name: c for c in characters}
    rows = []
    languages = sorted({c.language for c in characters})
    for lang in [*languages, "all"]:
        dialogues = [d for d in result.dialogues if lang in ("all", d.scene.language) and d.grade]
        kept = [d for d in dialogues if d.grade in keep_grades]
        items = [i for i in result.items if lang in ("all", i["language"])]
        chars = {d.character.name for d in dialogues}
        unique = {c.name for d in dialogues for c in d.scene.characters} | chars
        per_dim = Counter(i["dimension"] for i in items)
        rows.append({
            "language": lang,
            "test_characters": len([n for n in by_name if lang in ("all", by_name[n].language)]),
            "unique_characters": len(unique),
            "conversations": len(dialogues),
            "conversations_kept": len(kept),
            "mean_conversation_length": round(sum(len(d.turns) for d in dialogues) / len(dialogues), 2)
            if dialogues else None,
            "items": len(items),
            "items_per_conversation": round(len(items) / len(kept), 2) if kept else None,
            **{f"items_{d}": per_dim.get(d, 0) for d in DIMENSIONS},
        })
    return rows
