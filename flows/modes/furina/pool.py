"""Flow: books to a character-scene pool (tables under ``out``)."""

from __future__ import annotations

from prefect import flow

from rpbench.flows.modes.furina.pool_stages import build_pool_tables, publish_pool_stats
from rpbench.flows.kit.run import finish_run, publish_run_summary


@flow(name="rpbench-build-pool", log_prints=True)
async def build_pool(
    books: list[str],
    out: str = "runs/pool",
    language: str | None = None,
    target_tokens: int = 8192,
    min_tokens: int = 4096,
    max_tokens: int = 16384,
    min_utterances: int = 4,
    min_speakers: int = 2,
    plot_aware: bool = True,
    models: str | None = None,
    cache: str | None = None,
) -> dict:
    settings = {"target_tokens": target_tokens, "min_tokens": min_tokens, "max_tokens": max_tokens,
                "min_utterances": min_utterances, "min_speakers": min_speakers, "plot_aware": plot_aware}
    summary = await build_pool_tables(books, out, language, settings, models, cache)
    manifest = finish_run(out, models, cache, pool=summary, pool_settings=settings)
    publish_pool_stats(out)
    publish_run_summary(out, "rpbench-pool")
    return manifest
