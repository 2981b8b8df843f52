"""The pool's stages for one book, as plain functions over the gateway and typed records.

chunk (static, no LLM) -> boundaries (the plot-aware pass, all boundaries at
once) -> extract (all chunks at once) -> stitch and canonicalise names ->
assemble (rule filters, fragment calls for all scenes at once, de-duplication).
The pool flow runs each as a Prefect task per book; ``build_book`` runs them in
a row, for tests and benchmarks. Every LLM call is cached by the gateway, so a
second run of the same build sends nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rpbench.tasks.llm import Model
from rpbench.tasks.llm.local.tokens import count_tokens
from rpbench.tasks.modes.furina.config import PoolConfig
from rpbench.tasks.modes.furina.domain import Scene
from rpbench.tasks.modes.furina.pool.assemble import assemble, fragment_request
from rpbench.tasks.modes.furina.pool.boundaries import apply_boundaries, boundary_requests
from rpbench.tasks.modes.furina.pool.chapters import find_headings
from rpbench.tasks.modes.furina.pool.chunking import ChunkingConfig, static_chunks
from rpbench.tasks.modes.furina.pool.extract import extraction_record, extraction_request, stitch
from rpbench.tasks.modes.furina.pool.filters import FilterConfig, deduplicate, dropped, rule_problem
from rpbench.tasks.modes.furina.pool.ingest import Book
from rpbench.tasks.modes.furina.pool.names import alias_mapping, alias_request, apply_aliases, speaker_counts
from rpbench.tasks.modes.furina.records import BookRecord, Chunk, DroppedScene, Extraction, RawScene

# (done, total) -> None: how a stage hears of progress, whoever reports it.
OnDone = Callable[[int, int], Any] | None


@dataclass
class BookPool:
    book: BookRecord
    chunks: list[Chunk]
    scenes: list[Scene]
    dropped: list[DroppedScene]
    failures: dict[str, int]


def chunk_rows(book: Book, spans: list[tuple[int, int]], boundary: list[str]) -> list[Chunk]:
    counts = count_tokens([book.text[s:e] for s, e in spans])
    return [
        Chunk(book_id=book.book_id, chunk_index=i, text=book.text[s:e], n_tokens=n, start_char=s, end_char=e,
              boundary=boundary[i])
        for i, ((s, e), n) in enumerate(zip(spans, counts, strict=True))
    ]


def book_record(book: Book, n_chunks: int) -> BookRecord:
    return BookRecord(book_id=book.book_id, title=book.title, language=book.language, source=book.source,
                      encoding=book.encoding, n_chars=len(book.text),
                      n_headings=len(find_headings(book.text, book.language)), n_chunks=n_chunks)


def chunk_book(book: Book, cfg: ChunkingConfig) -> tuple[BookRecord, list[Chunk]]:
    """Static chunks by chapter and token budget; no LLM."""
    spans = [(s.start, s.end) for s in static_chunks(book.text, book.language, cfg)]
    chunks = chunk_rows(book, spans, ["static"] * len(spans))
    return book_record(book, len(chunks)), chunks


async def move_boundaries(gateway: Model, book: Book, chunks: list[Chunk], on_done: OnDone = None) -> list[Chunk]:
    """The plot-aware pass: an unfinished chunk ending moves to the next chunk; each boundary says what happened."""
    spans = [(c.start_char, c.end_char) for c in chunks]
    if len(spans) < 2:
        return chunks  # no boundary to judge
    requests = boundary_requests(book, spans)
    verdicts = await gateway.run_all(requests, on_done=on_done)
    spans, moves = apply_boundaries(book.text, spans, verdicts)
    return chunk_rows(book, spans, [m.status for m in moves] + ["last"])


async def extract_scenes(gateway: Model, book: Book, chunks: list[Chunk], on_done: OnDone = None) -> list[Extraction]:
    requests = [extraction_request(book, c.chunk_index, c.text) for c in chunks]
    results = await gateway.run_all(requests, on_done=on_done)
    return [extraction_record(c, r) for c, r in zip(chunks, results, strict=True)]


async def stitch_scenes(gateway: Model, book: Book, extractions: list[Extraction]) -> tuple[list[RawScene], bool]:
    """Scenes joined across chunk edges, speakers under one name each; and whether the alias call failed."""
    ordered = sorted(extractions, key=lambda e: e.chunk_index)
    raw = stitch(book.book_id, [e.scenes for e in ordered])
    counts = speaker_counts(raw)
    if len(counts) <= 1:
        return raw, False
    result = await gateway.run(alias_request(book, counts))
    if not result.ok:
        return raw, True
    mapping, _ignored = alias_mapping(result.parsed, set(counts))
    apply_aliases(raw, mapping)
    return raw, False


async def assemble_scenes(gateway: Model, book: Book, raw: list[RawScene], cfg: FilterConfig,
                          on_done: OnDone = None) -> tuple[list[Scene], list[DroppedScene], int]:
    """Rule filters, then FURINA's structure for every remaining scene; (scenes, dropped, failed fragment calls)."""
    gone: list[DroppedScene] = []
    candidates: list[RawScene] = []
    for sc in raw:
        problem = rule_problem(sc, cfg)
        if problem:
            gone.append(dropped(sc, problem))
        else:
            candidates.append(sc)
    requests = [fragment_request(book, i, sc) for i, sc in enumerate(candidates)]
    fragments = await gateway.run_all(requests, on_done=on_done)
    scenes: list[Scene] = []
    for sc, res in zip(candidates, fragments, strict=True):
        made = assemble(book, sc, res)
        if isinstance(made, str):
            gone.append(dropped(sc, made))
        else:
            scenes.append(made)
    scenes, dupes = deduplicate(scenes)
    gone += [dropped(RawScene(book_id=d.book_id, summary=d.summary, characters=[], dialogue=d.original_dialogue,
                              chunk_indices=d.chunk_indices, truncated=False), "duplicate dialogue") for d in dupes]
    return scenes, gone, sum(not f.ok for f in fragments)


async def build_book(gateway: Model, book: Book, cfg: PoolConfig) -> BookPool:
    """Every stage for one book, in a row."""
    record, chunks = chunk_book(book, cfg.chunking)
    if cfg.plot_aware:
        chunks = await move_boundaries(gateway, book, chunks)
    extractions = await extract_scenes(gateway, book, chunks)
    raw, aliases_failed = await stitch_scenes(gateway, book, extractions)
    scenes, gone, fragment_failures = await assemble_scenes(gateway, book, raw, cfg.filters)
    failures = {"boundary": sum(c.boundary == "failed" for c in chunks),
                "extraction": sum(e.status == "failed" for e in extractions),
                "aliases": int(aliases_failed), "fragment": fragment_failures}
    return BookPool(record, chunks, scenes, gone, failures)
