"""Scene filters and pool statistics. A dropped scene is recorded with its reason, never lost silently."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rpbench.tasks.modes.furina.pool.extract import RawScene
from rpbench.tasks.modes.furina.pool.models import PoolScene


@dataclass(frozen=True)
class FilterConfig:
    min_utterances: int = 4
    min_speakers: int = 2


def rule_problem(scene: RawScene, cfg: FilterConfig) -> str | None:
    """Why a raw scene cannot become a pool scene, or None."""
    if len(scene.dialogue) < cfg.min_utterances:
        return f"only {len(scene.dialogue)} utterances (minimum {cfg.min_utterances})"
    n_speakers = len({line.speaker for line in scene.dialogue})
    if n_speakers < cfg.min_speakers:
        return f"only {n_speakers} speaker(s) (minimum {cfg.min_speakers})"
    return None


def dialogue_key(scene: PoolScene | RawScene) -> tuple[tuple[str, str], ...]:
    lines = scene.original_dialogue if isinstance(scene, PoolScene) else scene.dialogue
    return tuple((ln.speaker.strip().lower(), " ".join(ln.text.lower().split())) for ln in lines)


def deduplicate(scenes: list[PoolScene]) -> tuple[list[PoolScene], list[PoolScene]]:
    """Keep the first of scenes with the same dialogue; return (kept, duplicates)."""
    seen: set[tuple[tuple[str, str], ...]] = set()
    kept, dupes = [], []
    for sc in scenes:
        key = dialogue_key(sc)
        (dupes if key in seen else kept).append(sc)
        seen.add(key)
    return kept, dupes


def pool_stats(books: Iterable[dict[str, Any]], chunks: int, scenes: list[PoolScene], dropped: int) -> list[dict]:
    """One row per language plus an 'all' row: books, chunks, scenes, characters, utterances, dropped."""
    books = list(books)
    rows = []
    for lang in sorted({b["language"] for b in books} | {s.language for s in scenes}) + ["all"]:
        lang_scenes = [s for s in scenes if lang in ("all", s.language)]
        rows.append({
            "language": lang,
            "books": sum(1 for b in books if lang in ("all", b["language"])),
            "chunks": chunks if lang == "all" else sum(b["n_chunks"] for b in books if b["language"] == lang),
            "scenes": len(lang_scenes),
            "characters": len({(s.book_id, c.name) for s in lang_scenes for c in s.characters}),
            "utterances": sum(len(s.original_dialogue) for s in lang_scenes),
            "dropped_scenes": dropped if lang == "all" else None,
        })
    return rows
