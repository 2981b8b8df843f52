"""Scene filters and pool statistics. A dropped scene is recorded with its reason, never lost silently."""

from __future__ import annotations

from collections.abc import Sequence

from rpbench.tasks.modes.furina.config import FilterConfig
from rpbench.tasks.modes.furina.domain import Scene
from rpbench.tasks.modes.furina.records import BookRecord, DroppedScene, PoolStats, RawScene


def rule_problem(scene: RawScene, cfg: FilterConfig) -> str | None:
    """Why a raw scene cannot become a pool scene, or None."""
    if len(scene.dialogue) < cfg.min_utterances:
        return f"only {len(scene.dialogue)} utterances (minimum {cfg.min_utterances})"
    n_speakers = len({line.speaker for line in scene.dialogue})
    if n_speakers < cfg.min_speakers:
        return f"only {n_speakers} speaker(s) (minimum {cfg.min_speakers})"
    return None


def dropped(scene: RawScene, reason: str) -> DroppedScene:
    return DroppedScene(book_id=scene.book_id, chunk_indices=scene.chunk_indices, summary=scene.summary,
                        n_utterances=len(scene.dialogue), reason=reason)


def dialogue_key(scene: Scene) -> tuple[tuple[str, str], ...]:
    return tuple((ln.speaker.strip().lower(), " ".join(ln.text.lower().split())) for ln in scene.original_dialogue)


def deduplicate(scenes: list[Scene]) -> tuple[list[Scene], list[Scene]]:
    """Keep the first of scenes with the same dialogue; return (kept, duplicates)."""
    seen: set[tuple[tuple[str, str], ...]] = set()
    kept: list[Scene] = []
    dupes: list[Scene] = []
    for sc in scenes:
        key = dialogue_key(sc)
        (dupes if key in seen else kept).append(sc)
        seen.add(key)
    return kept, dupes


def pool_stats(books: Sequence[BookRecord], scenes: Sequence[Scene], n_dropped: int) -> list[PoolStats]:
    """One row per language plus an 'all' row: books, chunks, scenes, characters, utterances, dropped."""
    rows = []
    for lang in [*sorted({b.language for b in books} | {s.language for s in scenes}), "all"]:
        lang_scenes = [s for s in scenes if lang in ("all", s.language)]
        lang_books = [b for b in books if lang in ("all", b.language)]
        rows.append(PoolStats(
            language=lang,
            books=len(lang_books),
            chunks=sum(b.n_chunks for b in lang_books),
            scenes=len(lang_scenes),
            characters=len({(s.book_id, c.name) for s in lang_scenes for c in s.characters}),
            utterances=sum(len(s.original_dialogue) for s in lang_scenes),
            dropped_scenes=n_dropped if lang == "all" else None,
        ))
    return rows
