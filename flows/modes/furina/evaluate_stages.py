"""Prefect tasks of evaluation: thin wrappers over ``tasks.evaluation``."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact

from rpbench.storage.pool import read_scenes
from rpbench.storage.schemas import CHECKS, GENERATIONS, ITEM_SCORES, ITEMS, JUDGMENTS, MODEL_SCORES, SCENES
from rpbench.storage.tables import atomic_write_bytes, read_rows, write_table
from rpbench.tasks.modes.furina.characters.schema import load_characters
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.furina.evaluation.aggregate import hallucination_rates, leaderboard, model_scores
from rpbench.tasks.modes.furina.evaluation.report import charts, html_report, markdown_report
from rpbench.tasks.modes.furina.evaluation.run import EvalConfig, bind_models, evaluate
from rpbench.flows.kit.progress import Progress
from rpbench.flows.kit.runtime import get_runtime


def load_bench(bench: str | Path) -> tuple[list[dict], dict, dict]:
    """Items, characters by name and scenes by id of a benchmark folder; an InputError if anything is off."""
    bench_dir = Path(bench)
    for needed in (ITEMS.filename, "characters.yaml", SCENES.filename):
        if not (bench_dir / needed).is_file():
            raise InputError(f"{bench}: no {needed} (build a benchmark first: rpbench build)")
    items = read_rows(bench_dir / ITEMS.filename, ITEMS)
    characters = {c.name: c for c in load_characters(bench_dir / "characters.yaml")}
    scenes = {s.scene_id: s for s in read_scenes(bench_dir / SCENES.filename)}
    for it in items:
        if it["character"] not in characters or it["scene_id"] not in scenes:
            raise InputError(f"{bench}: item {it['item_id']}: field 'character'/'scene_id' refers to nothing in the bench")
    return items, characters, scenes


@task(name="evaluate-models")
async def evaluate_models(bench: str, models: list[str], out: str, resamples: int, seed: int,
                          models_file: str | None, cache: str | None) -> dict:
    rt = get_runtime(out, models_file, cache)
    items, characters, scenes = load_bench(bench)
    roles = bind_models(rt.gateway.config, models)
    cfg = EvalConfig(resamples=resamples, seed=seed)
    async with rt.calls() as gateway:
        tables = await evaluate(gateway, items, characters, scenes, roles, cfg, progress=Progress)
    write_table(rt.run.table(GENERATIONS), tables.generations, GENERATIONS)
    write_table(rt.run.table(JUDGMENTS), tables.judgments, JUDGMENTS)
    write_table(rt.run.table(CHECKS), tables.checks, CHECKS)
    write_table(rt.run.table(ITEM_SCORES), tables.item_scores, ITEM_SCORES)
    scores = model_scores(tables.item_scores, resamples, seed)
    write_table(rt.run.table(MODEL_SCORES), scores, MODEL_SCORES)
    halluc = hallucination_rates(tables.item_scores)
    board = leaderboard(scores, tables.item_scores, halluc, tables.failures)
    md = markdown_report(board, halluc, tables.failures, len(items))
    atomic_write_bytes(rt.run.root / "report.md", md.encode("utf-8"))
    atomic_write_bytes(rt.run.root / "report.html", html_report(md, charts(board, scores)).encode("utf-8"))
    await acreate_table_artifact(table=[{k: v for k, v in r.items()} for r in board["rows"]], key="leaderboard",
                          description="rpbench leaderboard")
    await acreate_markdown_artifact(markdown=md, key="evaluation-report", description="rpbench evaluation report")
    return {"items": len(items), "models": models, "leaderboard": board["rows"], "pareto": board["pareto"],
            "separability_index": board["separability_index"], "failures": tables.failures,
            "report": str(rt.run.root / "report.html")}
