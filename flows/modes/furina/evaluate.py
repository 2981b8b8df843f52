"""Flow: models under test answer the benchmark; both-order judgments; checks; scores; the report.

answers (the base, and each model under test) -> judgments -> checks ->
scores, each a cached Prefect task per model, then one report stage. Adding
a model to an earlier evaluation runs only that model's stages (and the
report); binding the judge to another model re-runs judgments and what
follows them, never the answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.front.registry import run_models
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.scale.runners import stage_runner
from rpbench.flows.modes.furina.checks import check_models
from rpbench.flows.modes.furina.settings import EvalSettings
from rpbench.storage.schemas import FAILURES
from rpbench.storage.tables import read_records
from rpbench.tasks.llm.given import read_answers
from rpbench.tasks.modes.furina.evaluation.bench import bench_files, first_items, load_bench, shows_scene_extras
from rpbench.tasks.modes.furina.evaluation.run import EvalConfig, answer, check, given_generations, judge, score
from rpbench.tasks.modes.furina.tables import CHECKS, GENERATIONS, ITEM_SCORES, JUDGMENTS
from rpbench.tasks.reports.report import failure_counts

WORKERS = 4  # model shards at once; LLM calls are bounded by the gateway whatever this is
BENCH = ("items", "characters", "scenes")


@stage("eval-answers", batch=True, templates=("furina/builder/test_turn", "furina/dims/"),
       roles=lambda p: [p["role"]] if p["role"] else [], inputs=(*BENCH, "given"))
async def answers(run: StageRun, items: str, characters: str, scenes: str, role: str | None, given: str | None,
                  name: str, extras: bool) -> StageResult:
    """``name``'s replies: asked of the model bound to ``role``, or read from the file ``given``."""
    bench = load_bench(items, characters, scenes)
    if given is not None:
        made = given_generations(bench, read_answers(given), name, given)
    else:
        assert role is not None
        async with run.gateway() as gateway:
            made = await answer(gateway, bench, role, name, EvalConfig(test_sees_scene_extras=extras),
                                run.progress.track(f"answers of {name}", len(bench.items)))
    run.write(GENERATIONS, made)
    return run.result(failed=sum(g.status == "failed" for g in made))


@stage("eval-judgments", batch=True, templates=("furina/eval/judge", "furina/dims/"), roles=("judge",),
       inputs=(*BENCH, "base", "answers"))
async def judgments(run: StageRun, items: str, characters: str, scenes: str, base: str, answers: str, name: str,
                    extras: bool) -> StageResult:
    """Both orders per item; the judge sees the scene, the profiles and the strategy the test character saw."""
    bench = load_bench(items, characters, scenes)
    async with run.gateway() as gateway:
        made = await judge(gateway, bench, read_records(base, GENERATIONS), read_records(answers, GENERATIONS),
                           name, run.progress.track(f"judgments of {name}", 2 * len(bench.items)), extras)
    run.write(JUDGMENTS, made)
    return run.result(failed=sum(j.status == "failed" for j in made))


@stage("eval-checks", batch=True, templates=("furina/eval/checker",), roles=("checker",), inputs=(*BENCH, "judgments"))
async def checks(run: StageRun, items: str, characters: str, scenes: str, judgments: str, name: str) -> StageResult:
    bench = load_bench(items, characters, scenes)
    rows = read_records(judgments, JUDGMENTS)
    async with run.gateway() as gateway:
        made = await check(gateway, bench, rows, name, run.progress.track(f"hallucination checks of {name}",
                                                                          len(rows)))
    run.write(CHECKS, made)
    return run.result(failed=sum(c.status == "failed" for c in made))


@stage("eval-scores", inputs=(*BENCH, "base", "answers", "judgments", "checks"))
async def scores(run: StageRun, items: str, characters: str, scenes: str, base: str, answers: str, judgments: str,
                 checks: str, name: str) -> StageResult:
    bench = load_bench(items, characters, scenes)
    made, failures = score(bench, read_records(base, GENERATIONS), read_records(answers, GENERATIONS),
                           read_records(judgments, JUDGMENTS), read_records(checks, CHECKS), name, EvalConfig().f)
    run.write(ITEM_SCORES, made)
    run.write(FAILURES, failures)
    return run.result(scored=len(made), failures=len(failures))


@flow(name="rpbench-evaluate", log_prints=True, task_runner=stage_runner(WORKERS))
@flow_body
def evaluate(s: EvalSettings, stages: Stages) -> dict:
    """Evaluate models: answers, judgments in both orders (role `judge`), hallucination checks (role `checker`)."""
    files = bench_files(s.bench)
    if s.limit is not None:
        files["items"] = first_items(files["items"], s.limit, Path(s.out) / "stages" / "limit")
    n_items = len(load_bench(**files).items)
    systems = checked(check_models, s)  # the base first
    run = {**files, "extras": shows_scene_extras(s.bench)}
    made = stages.map(answers, [{**run, **system.params()} for system in systems])
    base = made[0].path("generations")
    shards = [{**run, "name": x.name, "shard": x.shard, "base": base, "answers": m.path("generations")}
              for x, m in zip(systems[1:], made[1:], strict=True)]
    judged = stages.map(judgments, shards)
    shards = [{**sh, "judgments": j.path("judgments")} for sh, j in zip(shards, judged, strict=True)]
    hallucination = stages.map(checks, [{k: v for k, v in sh.items() if k not in ("base", "answers", "extras")}
                                        for sh in shards])
    scored = stages.map(scores, [{**{k: v for k, v in sh.items() if k != "extras"}, "checks": c.path("checks")}
                                 for sh, c in zip(shards, hallucination, strict=True)])
    tables = {"generations": [m.path("generations") for m in made], "judgments": [j.path("judgments") for j in judged],
              "checks": [c.path("checks") for c in hallucination],
              "item_scores": [x.path("item_scores") for x in scored], "failures": [x.path("failures") for x in scored]}
    done = stages.score("furina", {**files, **tables, "n_items": n_items,
                                   "judge_model": run_models(s.models_file).for_role("judge").model,
                                   "base": systems[0].name, "run": Path(s.out).resolve().name},
                        systems=[x.name for x in systems[1:]])
    failures = failure_counts(read_records(done.path("failures"), FAILURES))
    summary = done.scores("pareto", "separability_index", items=n_items, models=[x.name for x in systems[1:]],
                          failures=failures)
    return finish_run(s.out, stages, s, "evaluate", evaluation=summary,
                      evaluation_settings=s.recorded(s.out))


def evaluate_side_by_side(bench: str, models: list[str], out: str, models_file: str | None,
                          cache: str | None) -> dict[str, Any]:
    """FURINA's evaluation of ``models`` on a built benchmark (training's --eval-bench hook): its summary."""
    manifest = evaluate(EvalSettings(bench=bench, models=models, out=out, models_file=models_file, cache=cache))
    return dict(manifest.get("evaluation", {}))  # a failed evaluation raised RunFailed instead
