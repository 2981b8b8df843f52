"""Flow: characters + pool -> benchmark, each stage a cached Prefect task per test character.

Per character, in waves: simulate (a wave of dialogues from the same count
snapshot) -> grade (the judge grades each finished dialogue); the kept items
decide whether another wave is needed. Then items: dialogues, items, stats,
chart, and the characters and scenes the items refer to, under ``out``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from prefect import flow

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.front.registry import run_models
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.running.ui import publish_table
from rpbench.flows.kit.scale.runners import stage_runner
from rpbench.flows.modes.furina.checks import check
from rpbench.flows.modes.furina.settings import BuildSettings
from rpbench.storage.tables import read_records, write_table
from rpbench.tasks.modes.furina.builder.build import (
    build_stats,
    finish_build,
    grade_wave,
    kept_counts,
    plan_wave,
    scene_queue,
    selection_counts,
    simulate_wave,
    slug,
    source_model_counts,
)
from rpbench.tasks.modes.furina.builder.chart import items_per_dimension_chart
from rpbench.tasks.modes.furina.builder.dwrs import DIMENSIONS, covered
from rpbench.tasks.modes.furina.builder.simulate import BuildConfig, turn_records
from rpbench.tasks.modes.furina.character_files import write_characters
from rpbench.tasks.modes.furina.domain import Character
from rpbench.tasks.modes.furina.scene_files import read_scenes
from rpbench.tasks.modes.furina.tables import BUILD_STATS, DIALOGUES, GRADES, ITEMS, SCENES, SOURCE_MODELS

WORKERS = 4  # character shards at once; LLM calls are bounded by the gateway whatever this is
SIMULATION_TEMPLATES = ("furina/builder/director", "furina/builder/scene_turn", "furina/builder/test_turn",
                        "furina/builder/select", "furina/dims/")


@stage("build-simulate", templates=SIMULATION_TEMPLATES, inputs=("pool",),
       roles=lambda p: ["director", "scene", "base", "judge", *p["config"].sources])
async def simulate(run: StageRun, character: Character, pool: str, config: BuildConfig, wave: int, started: int,
                   kept: dict[str, int], selected: dict[str, int]) -> StageResult:
    """One wave of a character's dialogues, each steered by DWRS from the same snapshot of its selection counts."""
    dialogues = plan_wave(character, scene_queue(character, read_scenes(pool), config), config, started, kept)
    async with run.gateway() as gateway:
        done = await simulate_wave(gateway, dialogues, selected, config,
                                   run.progress.track("dialogues", len(dialogues)))
    turns = [t for d in done for t in turn_records(d)]
    run.write(DIALOGUES, turns, f"dialogues-w{wave}.parquet")
    failures: Counter[str] = Counter()
    for d in done:
        failures.update(d.failures)
    return run.result(dialogues=len(done), selected=selection_counts(turns), failures=dict(failures))


@stage("build-grade", templates=("furina/builder/grade",), roles=("judge",), inputs=("dialogues", "pool"))
async def grade(run: StageRun, dialogues: str, pool: str, config: BuildConfig, wave: int) -> StageResult:
    """The judge grades each dialogue of the wave; what the kept ones give counts toward tau."""
    turns = read_records(dialogues, DIALOGUES)
    n = len({t.dialogue_id for t in turns})
    async with run.gateway() as gateway:
        grades = await grade_wave(gateway, turns, {s.scene_id: s for s in read_scenes(pool)},
                                  run.progress.track("grades", n))
    run.write(GRADES, grades, f"grades-w{wave}.parquet")
    return run.result(kept=kept_counts(turns, grades, config),
                      failures={"grade": sum(g.status == "failed" for g in grades)})


@stage("build-items", inputs=("pool", "dialogues", "grades"))
async def items(run: StageRun, characters: list[Character], pool: str, dialogues: list[str], grades: list[str],
                config: BuildConfig, coverage: dict[str, dict[str, int]], source_models: dict[str, str]) -> StageResult:
    """Items from the kept dialogues; the benchmark folder gets everything evaluation needs."""
    scenes = read_scenes(pool)
    result = finish_build([t for p in dialogues for t in read_records(p, DIALOGUES)],
                          [g for p in grades for g in read_records(p, GRADES)], characters, scenes, config,
                          coverage, {}, source_models)
    run.write(ITEMS, result.items, final=True)
    run.write(DIALOGUES, result.turns, final=True)
    run.write(GRADES, result.grades, final=True)
    used = {t.scene_id for t in result.turns}
    run.write(SCENES, [s for s in scenes if s.scene_id in used], final=True)
    stats = build_stats(result, characters, scenes, config.keep_grades)
    final = run.final_folder
    run.tables[BUILD_STATS.name] = str(write_table(final / BUILD_STATS.filename, stats, BUILD_STATS))
    sources = source_model_counts(result.items)
    run.tables[SOURCE_MODELS.name] = str(write_table(final / SOURCE_MODELS.filename, sources, SOURCE_MODELS))
    # The benchmark carries the characters its items refer to, so evaluation needs nothing else.
    run.tables["characters"] = str(write_characters(final / "characters.yaml", characters))
    run.tables["chart"] = str(items_per_dimension_chart(result.items, final / "items_per_dimension.png"))
    await publish_table("benchmark-source-models", sources, "Who wrote the accepted replies (appendix J)")
    await publish_table("benchmark-coverage",
                        [{"character": name, **dims, "covered": name not in result.budget_exhausted}
                         for name, dims in result.coverage.items()],
                        f"Kept items per dimension (tau={config.tau}); uncovered = budget spent")
    return run.result(dialogues=len({t.dialogue_id for t in result.turns}), items=len(result.items),
                      budget_exhausted=result.budget_exhausted)


@flow(name="rpbench-build-benchmark", log_prints=True, task_runner=stage_runner(WORKERS))
@flow_body
def build_benchmark(s: BuildSettings, stages: Stages) -> dict:
    """Simulate dialogues (director, DWRS, source vs base judged), keep winning turns as benchmark items."""
    characters, sources = checked(check, s)
    config = s.build(sources)
    pool = str(Path(s.pool) / SCENES.filename)
    run = {"pool": pool, "config": config}
    kept = {c.name: dict.fromkeys(DIMENSIONS, 0) for c in characters}  # accepted items: the tau stop rule
    selected = {c.name: dict.fromkeys(DIMENSIONS, 0) for c in characters}  # DWRS selections: the steering
    started = dict.fromkeys(kept, 0)
    dialogues: list[str] = []
    grades: list[str] = []
    failures: Counter[str] = Counter()
    for wave in range(s.budget):
        active = [c for c in characters
                  if not covered(list(kept[c.name].values()), s.tau) and started[c.name] < s.budget]
        if not active:
            break
        shards: list[dict[str, Any]] = [{**run, "wave": wave, "shard": slug(c.name)} for c in active]
        simulated = stages.map(simulate, [{**sh, "character": c, "started": started[c.name], "kept": kept[c.name],
                                           "selected": selected[c.name]}
                                          for sh, c in zip(shards, active, strict=True)])
        graded = stages.map(grade, [{**sh, "dialogues": r.path(f"dialogues-w{wave}")}
                                    for sh, r in zip(shards, simulated, strict=True)])
        for c, sim, gr in zip(active, simulated, graded, strict=True):
            started[c.name] += sim.summary["dialogues"]
            kept[c.name] = {d: kept[c.name][d] + n for d, n in gr.summary["kept"].items()}
            selected[c.name] = {d: selected[c.name][d] + n for d, n in sim.summary["selected"].items()}
            dialogues.append(sim.path(f"dialogues-w{wave}"))
            grades.append(gr.path(f"grades-w{wave}"))
            failures.update(sim.summary["failures"])
            failures.update(gr.summary["failures"])
    cfg = run_models(s.models_file)
    built = stages.run(items, characters=characters, pool=pool, dialogues=dialogues, grades=grades, config=config,
                       coverage=kept, source_models={r: cfg.for_role(r).model for r in sources})
    summary = {"dialogues": built.summary["dialogues"], "items": built.summary["items"], "coverage": kept,
               "budget_exhausted": built.summary["budget_exhausted"], "failed_calls": dict(failures), "tau": s.tau}
    return finish_run(s.out, stages, s, "build-benchmark", build=summary,
                      build_settings=s.recorded(s.out))
