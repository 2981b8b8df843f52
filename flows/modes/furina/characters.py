"""Flow: synthesize original test characters (and a scene for each group of them)."""

from __future__ import annotations

from prefect import flow

from rpbench.flows.modes.furina.characters_stages import synthesize_characters_task
from rpbench.flows.kit.run import finish_run, publish_run_summary


@flow(name="rpbench-synthesize-characters", log_prints=True)
async def synthesize_characters(
    out: str,
    n: int = 3,
    language: str = "en",
    groups: int = 1,
    pool: str | None = None,
    seed_roles: list[str] | None = None,
    max_refine: int = 2,
    run_dir: str = "runs/characters",
    models: str | None = None,
    cache: str | None = None,
) -> dict:
    summary = await synthesize_characters_task(out, n, language, groups, pool, seed_roles or ["synthesizer"],
                                               run_dir, models, cache, max_refine)
    manifest = finish_run(run_dir, models, cache, synthesis=summary)
    publish_run_summary(run_dir, "rpbench-characters")
    return manifest
