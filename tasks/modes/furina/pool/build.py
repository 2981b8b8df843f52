"""Build the pool for a set of books: the whole pipeline as one async function over the gateway.

Per book: static chunks -> plot-aware boundary moves (all boundaries at once)
-> scene extraction (all chunks at once) -> stitching -> alias canonicalisation
-> rule filters -> fragment assembly (all scenes at once) -> de-duplication.
Books run concurrently. Every LLM call is cached by the gateway, so a second
run of the same build sends nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rpbench.tasks.llm import Gateway
from rpbench.tasks.modes.furina.pool.assemble import assemble, fragment_request
from rpbench.tasks.modes.furina.pool.boundaries import apply_boundaries, boundary_requests
from rpbench.tasks.modes.furina.pool.chapters import find_headings
from rpbench.tasks.modes.furina.pool.chunking import ChunkingConfig, static_chunks
from rpbench.tasks.modes.furina.pool.extract import RawScene, extraction_request, stitch
from rpbench.tasks.modes.furina.pool.filters import FilterConfig, deduplicate, rule_problem
from rpbench.tasks.modes.furina.pool.ingest import Book
from rpbench.tasks.modes.furina.pool.models import PoolScene
from rpbench.tasks.modes.furina.pool.names import alias_mapping, alias_request, apply_aliases, speaker_counts
from rpbench.tasks.modes.furina.pool.tokens import count_tokens

ProgressFactory = Callable[[str, int], Any]


@dataclass(frozen=True)
class PoolConfig:
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    filters: FilterConfig = field(default_factory=FilterConfig)
    plot_aware: bool = True


@dataclass
class BookPool:
    book: dict[str, Any]
    chunks: list[dict[str, Any]]
    scenes: list[PoolScene]
    dropped: list[dict[str, Any]]
    failures: dict[str, int]


def chunk_rows(book: Book, spans: list[tuple[int, int]], boundary: list[str]) -> list[dict[str, Any]]:
    counts = count_tokens([book.text[s:e] for s, e in spans])
    return [
        {"book_id": book.book_id, "chunk_index": i, "text": book.text[s:e], "n_tokens": n,
         "start_char": s, "end_char": e, "boundary": boundary[i]}
        for i, ((s, e), n) in enumerate(zip(spans, counts, strict=True))
    ]


def book_row(book: Book, n_chunks: int) -> dict[str, Any]:
    return {"book_id": book.book_id, "title": book.title, "language": book.language, "source": book.source,
            "encoding": book.encoding, "n_chars": len(book.text),
            "n_headings": len(find_headings(book.text, book.language)), "n_chunks": n_chunks}


def _dropped(book: Book, scene: RawScene, reason: str) -> dict[str, Any]:
    return {"book_id": book.book_id, "chunk_indices": scene.chunk_indices, "summary": scene.summary,
            "n_utterances": len(scene.dialogue), "reason": reason}


async def build_book(gateway: Gateway, book: Book, cfg: PoolConfig, progress: ProgressFactory | None = None) -> BookPool:
    def tracker(name: str, total: int) -> Any:
        return progress(f"{book.title}: {name}", total) if progress else None

    failures = {"boundary": 0, "extraction": 0, "aliases": 0, "fragment": 0}
    spans = [(s.start, s.end) for s in static_chunks(book.text, book.language, cfg.chunking)]
    boundary = ["static"] * len(spans)
    if cfg.plot_aware and len(spans) > 1:
        requests = boundary_requests(book, spans)
        verdicts = await gateway.run_all(requests, on_done=tracker("boundaries", len(requests)))
        spans, moves = apply_boundaries(book.text, spans, verdicts)
        boundary = [m.status for m in moves] + ["last"]
        failures["boundary"] = sum(m.status == "failed" for m in moves)
    chunks = chunk_rows(book, spans, boundary)

    requests = [extraction_request(book, c["chunk_index"], c["text"]) for c in chunks]
    extractions = await gateway.run_all(requests, on_done=tracker("extraction", len(requests)))
    failures["extraction"] = sum(not r.ok for r in extractions)
    raw = stitch([r.parsed.scenes if r.ok else [] for r in extractions])

    counts = speaker_counts(raw)
    if len(counts) > 1:
        result = await gateway.run(alias_request(book, counts))
        if result.ok:
            mapping, _ignored = alias_mapping(result.parsed, set(counts))
            apply_aliases(raw, mapping)
        else:
            failures["aliases"] = 1

    dropped: list[dict[str, Any]] = []
    candidates: list[RawScene] = []
    for sc in raw:
        problem = rule_problem(sc, cfg.filters)
        if problem:
            dropped.append(_dropped(book, sc, problem))
        else:
            candidates.append(sc)
    requests = [fragment_request(book, i, sc) for i, sc in enumerate(candidates)]
    fragments = await gateway.run_all(requests, on_done=tracker("assembly", len(requests)))
    scenes: list[PoolScene] = []
    for sc, res in zip(candidates, fragments, strict=True):
        scene, reason = assemble(book, sc, res)
        if scene is None:
            failures["fragment"] += not res.ok
            dropped.append(_dropped(book, sc, reason or "unknown"))
        else:
            scenes.append(scene)
    scenes, dupes = deduplicate(scenes)
    dropped += [{"book_id": book.book_id, "chunk_indices": d.chunk_indices, "summary": d.summary,
                 "n_utterances": len(d.original_dialogue), "reason": "duplicate dialogue"} for d in dupes]
    return BookPool(book_row(book, len(chunks)), chunks, scenes, dropped, failures)


async def build_pool(
    gateway: Gateway, books: list[Book], cfg: PoolConfig, progress: ProgressFactory | None = None
) -> list[BookPool]:
    return list(await asyncio.gather(*(build_book(gateway, b, cfg, progress) for b in books)))

