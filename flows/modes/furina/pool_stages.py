"""Prefect tasks of the pool: thin wrappers over ``tasks.pool``."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import create_table_artifact

from rpbench.storage.pool import write_scenes
from rpbench.storage.schemas import BOOKS, CHUNKS, DROPPED_SCENES, POOL_STATS, SCENES
from rpbench.storage.tables import read_rows, write_table
from rpbench.tasks.modes.furina.pool.build import PoolConfig, build_pool
from rpbench.tasks.modes.furina.pool.chunking import ChunkingConfig
from rpbench.tasks.modes.furina.pool.filters import FilterConfig, pool_stats
from rpbench.tasks.modes.furina.pool.ingest import read_book
from rpbench.flows.kit.progress import Progress
from rpbench.flows.kit.runtime import get_runtime


def pool_config(target_tokens: int, min_tokens: int, max_tokens: int, min_utterances: int, min_speakers: int,
                plot_aware: bool) -> PoolConfig:
    return PoolConfig(ChunkingConfig(target_tokens, min_tokens, max_tokens), FilterConfig(min_utterances, min_speakers),
                      plot_aware)


@task(name="build-pool")
async def build_pool_tables(
    books: list[str], out: str, language: str | None, settings: dict, models: str | None, cache: str | None
) -> dict:
    """Read the books, run the pool pipeline, write books/chunks/scenes/dropped_scenes/pool_stats."""
    rt = get_runtime(out, models, cache)
    parsed = [read_book(p, language) for p in books]
    async with rt.calls() as gateway:
        results = await build_pool(gateway, parsed, pool_config(**settings), progress=Progress)
    scenes = [s for r in results for s in r.scenes]
    dropped = [d for r in results for d in r.dropped]
    book_rows = [r.book for r in results]
    n_chunks = sum(len(r.chunks) for r in results)
    write_table(rt.run.table(BOOKS), book_rows, BOOKS)
    write_table(rt.run.table(CHUNKS), [c for r in results for c in r.chunks], CHUNKS)
    write_scenes(rt.run.table(SCENES), scenes)
    write_table(rt.run.table(DROPPED_SCENES), dropped, DROPPED_SCENES)
    write_table(rt.run.table(POOL_STATS), pool_stats(book_rows, n_chunks, scenes, len(dropped)), POOL_STATS)
    failures: dict[str, int] = {}
    for r in results:
        for key, n in r.failures.items():
            failures[key] = failures.get(key, 0) + n
    return {"scenes": len(scenes), "dropped": len(dropped), "chunks": n_chunks, "failed_calls": failures}


@task(name="publish-pool-stats")
def publish_pool_stats(out: str) -> list[dict]:
    rows = read_rows(Path(out) / POOL_STATS.filename, POOL_STATS)
    create_table_artifact(table=rows, key="pool-stats", description=f"Character-scene pool in {out}", _sync=True)
    return rows
