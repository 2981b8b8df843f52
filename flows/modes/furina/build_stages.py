"""Prefect tasks of the benchmark builder: thin wrappers over ``tasks.builder``."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import acreate_table_artifact

from rpbench.storage.characters import write_characters
from rpbench.storage.pool import read_scenes, write_scenes
from rpbench.storage.schemas import BUILD_STATS, DIALOGUES, ITEMS, SCENES
from rpbench.storage.tables import write_table
from rpbench.tasks.modes.furina.builder.build import build_benchmark, build_stats
from rpbench.tasks.modes.furina.builder.chart import items_per_dimension_chart
from rpbench.tasks.modes.furina.builder.simulate import BuildConfig
from rpbench.tasks.modes.furina.characters.schema import load_characters
from rpbench.tasks.core.errors import InputError
from rpbench.flows.kit.progress import Progress
from rpbench.flows.kit.runtime import get_runtime


def bind_sources(config, sources: list[str] | None) -> tuple[str, ...]:
    """Source roles; a value with a '/' is a model string, bound to a new role with the `source` settings."""
    roles = []
    for s in sources or ["source"]:
        if "/" in s:
            role = f"source@{s}"
            config.roles[role] = config.for_role("source").model_copy(update={"model": s})
            roles.append(role)
        else:
            roles.append(s)
    return tuple(roles)


@task(name="build-benchmark")
async def build_benchmark_tables(characters: str, pool: str, out: str, settings: dict, models: str | None,
                                 cache: str | None, only: list[str] | None = None) -> dict:
    rt = get_runtime(out, models, cache)
    chars = load_characters(characters)
    if only:
        unknown = sorted(set(only) - {c.name for c in chars})
        if unknown:
            raise InputError(f"{characters}: no character named {', '.join(unknown)}")
        chars = [c for c in chars if c.name in only]
    scenes_path = Path(pool) / SCENES.filename
    if not scenes_path.is_file():
        raise InputError(f"{pool}: no scenes.parquet (build a pool first: rpbench pool build)")
    scenes = read_scenes(scenes_path)
    cfg = BuildConfig(**{**settings, "sources": bind_sources(rt.gateway.config, settings.get("sources"))})
    budget = len(chars) * cfg.max_dialogues_per_character
    progress = Progress("dialogues (upper bound: the budget)", budget)
    async with rt.calls() as gateway:
        result = await build_benchmark(gateway, chars, scenes, cfg, on_dialogue=lambda n, d: progress(n, budget))
    # The benchmark carries the characters and scenes its items refer to, so evaluation needs nothing else.
    write_characters(rt.run.root / "characters.yaml", chars)
    used = {d.scene.scene_id for d in result.dialogues}
    write_scenes(rt.run.table(SCENES), [s for s in scenes if s.scene_id in used])
    write_table(rt.run.table(DIALOGUES), result.dialogue_rows, DIALOGUES)
    write_table(rt.run.table(ITEMS), result.items, ITEMS)
    stats = build_stats(result, chars, cfg.keep_grades)
    write_table(rt.run.table(BUILD_STATS), stats, BUILD_STATS)
    items_per_dimension_chart(result.items, rt.run.root / "items_per_dimension.png")
    coverage = [{"character": name, **dims, "covered": name not in result.budget_exhausted}
                for name, dims in result.coverage.items()]
    await acreate_table_artifact(table=coverage, key="benchmark-coverage",
                          description=f"Accepted items per dimension (tau={cfg.tau}); uncovered = budget spent")
    return {"dialogues": len(result.dialogues), "items": len(result.items), "coverage": result.coverage,
            "budget_exhausted": result.budget_exhausted, "failed_calls": result.failures, "tau": cfg.tau}
