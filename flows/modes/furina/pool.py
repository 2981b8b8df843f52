"""Flow: books to a character-scene pool, each stage a cached Prefect task per book.

chunk -> boundaries -> extract -> stitch -> assemble, mapped over the books,
then merge writes the pool's tables under ``out``: books, chunks, scenes,
dropped_scenes, pool_stats.
"""

from __future__ import annotations

from prefect import flow

from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.scale.runners import stage_runner
from rpbench.flows.modes.furina.checks import book_shards
from rpbench.flows.modes.furina.settings import PoolSettings
from rpbench.storage.tables import read_records
from rpbench.tasks.modes.furina.pool.build import (
    assemble_scenes,
    chunk_book,
    extract_scenes,
    move_boundaries,
    stitch_scenes,
)
from rpbench.tasks.modes.furina.pool.chunking import ChunkingConfig
from rpbench.tasks.modes.furina.pool.filters import FilterConfig, pool_stats
from rpbench.tasks.modes.furina.pool.ingest import Book, read_book, rejoin
from rpbench.tasks.modes.furina.scene_files import read_scenes
from rpbench.tasks.modes.furina.tables import BOOKS, CHUNKS, DROPPED_SCENES, EXTRACTIONS, POOL_STATS, RAW_SCENES, SCENES

WORKERS = 4  # book shards at once; LLM calls are bounded by the gateway whatever this is


def _book(book_table: str, chunks: str) -> Book:
    (record,) = read_records(book_table, BOOKS)
    return rejoin(record, read_records(chunks, CHUNKS))


@stage("pool-chunk", inputs=("book",))
async def chunk(run: StageRun, book: str, language: str | None, target_tokens: int, min_tokens: int,
                max_tokens: int) -> StageResult:
    parsed = read_book(book, language)
    record, chunks = chunk_book(parsed, ChunkingConfig(target_tokens, min_tokens, max_tokens))
    run.write(BOOKS, [record], "book.parquet")
    run.write(CHUNKS, chunks, "static_chunks.parquet")
    return run.result(book_id=record.book_id, chunks=len(chunks))


@stage("pool-boundaries", templates=("furina/pool/boundary",), inputs=("book_table", "chunks"),
       roles=lambda p: ["extractor"] if p["plot_aware"] else [])
async def boundaries(run: StageRun, book_table: str, chunks: str, plot_aware: bool) -> StageResult:
    book, static = _book(book_table, chunks), read_records(chunks, CHUNKS)
    moved = static
    if plot_aware:
        async with run.gateway() as gateway:
            moved = await move_boundaries(gateway, book, static, run.progress.track("boundaries", len(static) - 1))
    run.write(CHUNKS, moved)
    return run.result(failed=sum(c.boundary == "failed" for c in moved))


@stage("pool-extract", templates=("furina/pool/extract",), roles=("extractor",), inputs=("book_table", "chunks"))
async def extract(run: StageRun, book_table: str, chunks: str) -> StageResult:
    book, rows = _book(book_table, chunks), read_records(chunks, CHUNKS)
    async with run.gateway() as gateway:
        extractions = await extract_scenes(gateway, book, rows, run.progress.track("extraction", len(rows)))
    run.write(EXTRACTIONS, extractions)
    return run.result(failed=sum(e.status == "failed" for e in extractions))


@stage("pool-stitch", templates=("furina/pool/aliases",), roles=("extractor",),
       inputs=("book_table", "chunks", "extractions"))
async def stitch(run: StageRun, book_table: str, chunks: str, extractions: str) -> StageResult:
    book = _book(book_table, chunks)
    async with run.gateway() as gateway:
        raw, aliases_failed = await stitch_scenes(gateway, book, read_records(extractions, EXTRACTIONS))
    run.write(RAW_SCENES, raw)
    return run.result(scenes=len(raw), failed=int(aliases_failed))


@stage("pool-assemble", templates=("furina/pool/fragment",), roles=("extractor",),
       inputs=("book_table", "chunks", "raw_scenes"))
async def assemble(run: StageRun, book_table: str, chunks: str, raw_scenes: str, min_utterances: int,
                   min_speakers: int) -> StageResult:
    book, raw = _book(book_table, chunks), read_records(raw_scenes, RAW_SCENES)
    async with run.gateway() as gateway:
        scenes, dropped, failed = await assemble_scenes(
            gateway, book, raw, FilterConfig(min_utterances, min_speakers), run.progress.track("assembly", len(raw)))
    run.write(SCENES, scenes)
    run.write(DROPPED_SCENES, dropped)
    return run.result(scenes=len(scenes), dropped=len(dropped), failed=failed)


@stage("pool-merge", inputs=("books", "chunks", "scenes", "dropped"))
async def merge(run: StageRun, books: list[str], chunks: list[str], scenes: list[str],
                dropped: list[str]) -> StageResult:
    book_rows = [b for p in books for b in read_records(p, BOOKS)]
    chunk_rows = [c for p in chunks for c in read_records(p, CHUNKS)]
    # Book records carry the counts of the final chunks (after the plot-aware pass).
    counts = {b.book_id: sum(c.book_id == b.book_id for c in chunk_rows) for b in book_rows}
    book_rows = [b.model_copy(update={"n_chunks": counts[b.book_id]}) for b in book_rows]
    scene_rows = [s for p in scenes for s in read_scenes(p)]
    dropped_rows = [d for p in dropped for d in read_records(p, DROPPED_SCENES)]
    run.write(POOL_STATS, pool_stats(book_rows, scene_rows, len(dropped_rows)), final=True)
    run.write(BOOKS, book_rows, final=True)
    run.write(CHUNKS, chunk_rows, final=True)
    run.write(SCENES, scene_rows, final=True)
    run.write(DROPPED_SCENES, dropped_rows, final=True)
    return run.result(scenes=len(scene_rows), dropped=len(dropped_rows), chunks=len(chunk_rows))


@flow(name="rpbench-build-pool", log_prints=True, task_runner=stage_runner(WORKERS))
@flow_body
def build_pool(s: PoolSettings, stages: Stages) -> dict:
    """Books to a pool of scenes (tables under ``settings.out``)."""
    shards = book_shards(s.books)
    chunked = stages.map(chunk, [{"book": b, "language": s.language, "target_tokens": s.target_tokens,
                                  "min_tokens": s.min_tokens, "max_tokens": s.max_tokens, "shard": n}
                                 for b, n in zip(s.books, shards, strict=True)])
    tables = [{"book_table": c.path("book"), "shard": n} for c, n in zip(chunked, shards, strict=True)]
    moved = stages.map(boundaries, [{**t, "chunks": c.path("static_chunks"), "plot_aware": s.plot_aware}
                                    for t, c in zip(tables, chunked, strict=True)])
    tables = [{**t, "chunks": m.path("chunks")} for t, m in zip(tables, moved, strict=True)]
    found = stages.map(extract, tables)
    raw = stages.map(stitch, [{**t, "extractions": f.path("extractions")} for t, f in zip(tables, found, strict=True)])
    made = stages.map(assemble, [{**t, "raw_scenes": r.path("raw_scenes"), "min_utterances": s.min_utterances,
                                  "min_speakers": s.min_speakers} for t, r in zip(tables, raw, strict=True)])
    merged = stages.run(merge, books=[t["book_table"] for t in tables], chunks=[t["chunks"] for t in tables],
                        scenes=[m.path("scenes") for m in made], dropped=[m.path("dropped_scenes") for m in made])
    failures = {"boundary": sum(m.summary["failed"] for m in moved),
                "extraction": sum(f.summary["failed"] for f in found),
                "aliases": sum(r.summary["failed"] for r in raw),
                "fragment": sum(m.summary["failed"] for m in made)}
    summary = {**{k: merged.summary[k] for k in ("scenes", "dropped", "chunks")}, "failed_calls": failures}
    return finish_run(s.out, stages, s, "build-pool", pool=summary,
                      pool_settings=s.recorded(s.out))
