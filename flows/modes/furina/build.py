"""Flow: characters + pool -> benchmark (dialogues, items, stats) under ``out``."""

from __future__ import annotations

from prefect import flow

from rpbench.flows.modes.furina.build_stages import build_benchmark_tables
from rpbench.flows.kit.run import finish_run, publish_run_summary


@flow(name="rpbench-build-benchmark", log_prints=True)
async def build_benchmark(
    characters: str,
    pool: str,
    out: str = "runs/bench",
    only: list[str] | None = None,
    tau: int = 10,
    min_rounds: int = 6,
    max_rounds: int = 20,
    max_test_gap: int = 3,
    max_dialogues_per_character: int = 40,
    sources: list[str] | None = None,
    keep_grades: list[str] | None = None,
    concurrency: int = 8,
    seed: int = 0,
    test_sees_scene_extras: bool = False,
    models: str | None = None,
    cache: str | None = None,
) -> dict:
    settings = {"tau": tau, "min_rounds": min_rounds, "max_rounds": max_rounds, "max_test_gap": max_test_gap,
                "max_dialogues_per_character": max_dialogues_per_character, "sources": sources or ["source"],
                "keep_grades": tuple(keep_grades or ["high"]), "concurrency": concurrency, "seed": seed,
                "test_sees_scene_extras": test_sees_scene_extras}
    summary = await build_benchmark_tables(characters, pool, out, settings, models, cache, only)
    manifest = finish_run(out, models, cache, build=summary, build_settings=settings)
    publish_run_summary(out, "rpbench-build")
    return manifest
