"""RPBench-Auto's flow: dialogues (per candidate, both subsets) -> the kit's report stage, scored by
``analysis.scored`` (rounds, battles, the arena)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from prefect import flow

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.front.registry import run_models
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.scale.runners import stage_runner
from rpbench.flows.modes.rpbench_auto.checks import check_run, data_of
from rpbench.flows.modes.rpbench_auto.settings import RpbenchAutoSettings
from rpbench.storage.schemas import FAILURES
from rpbench.tasks.llm.gather import gather_counted
from rpbench.tasks.modes.rpbench_auto.dialogue import converse, failure_rows, load_items, rounds_of
from rpbench.tasks.modes.rpbench_auto.release import RELEASE
from rpbench.tasks.modes.rpbench_auto.tables import DIALOGUE_ENDS, ROUNDS

WORKERS = 4
MODE = "rpbench-auto"


@stage("rpbench-auto-dialogues", roles=lambda p: [p["role"], p["baseline_role"], p["judge"]],
       inputs=("character_data", "scene_data"))
async def dialogues(run: StageRun, subsets: list[str], character_data: str | None, scene_data: str | None,
                    limit: int | None, max_rounds: int | None, judge_asks: int, seed: int, baseline: str,
                    baseline_role: str, judge: str, role: str, given: str | None, name: str) -> StageResult:
    """``name`` (the model bound to ``role``) against the baseline on every character and scene, the judge
    playing the user."""
    paths = {"character": character_data, "scene": scene_data}
    items = [i for subset in subsets for i in load_items(subset, paths[subset])[:limit]]  # type: ignore[arg-type]
    async with run.gateway() as gateway:
        gateway.heal = False  # the dialogue heals its judge's asks itself (dialogue.judged)
        made = await gather_counted(
            [converse(gateway, i, name, role, baseline, baseline_role, judge, seed, rounds_of(i.subset, max_rounds),
                      judge_asks, not run.keep_failures) for i in items],
            run.progress.track(f"dialogues of {name}", len(items)))
    ends = [end for _, end in made]
    run.write(ROUNDS, [r for rounds, _ in made for r in rounds])
    run.write(DIALOGUE_ENDS, ends)
    run.write(FAILURES, failure_rows(run.spec.name, ends))
    return run.result(dialogues=len(made), rounds=sum(len(r) for r, _ in made),
                      failed=sum(e.status == "failed" for e in ends))


def version(s: RpbenchAutoSettings) -> str:
    """What makes two runs' battles comparable: the release's commit, the rounds, and data of one's own."""
    parts = [RELEASE.commit[:7]]
    if s.max_rounds:
        parts.append(f"at most {s.max_rounds} rounds")
    for subset in s.subsets:
        own = data_of(s, subset)
        if own:
            parts.append(f"{subset} data {hashlib.sha256(Path(own).read_bytes()).hexdigest()[:12]}")
    return ", ".join(parts)


@flow(name="rpbench-rpbench-auto", log_prints=True, task_runner=stage_runner(WORKERS))
@flow_body
def rpbench_auto(s: RpbenchAutoSettings, stages: Stages) -> dict:
    """RPBench-Auto: each candidate against the baseline on every character and scene, the judge playing the
    user; win rates, the arena's Elo with intervals, and the report."""
    got = checked(check_run, s)
    config = run_models(s.models_file)
    common = {"subsets": list(s.subsets), "character_data": s.character_data, "scene_data": s.scene_data,
              "limit": s.limit, "max_rounds": s.max_rounds, "judge_asks": s.judge_asks, "seed": s.seed,
              "baseline": s.baseline, "baseline_role": got.baseline, "judge": got.judge}
    made = stages.map(dialogues, [{**common, **x.params()} for x in got.systems])
    judge_model = config.for_role(got.judge).model
    done = stages.score(MODE, {"rounds": [m.path(ROUNDS.name) for m in made],
                               "ends": [m.path(DIALOGUE_ENDS.name) for m in made],
                               "failures": [m.path(FAILURES.name) for m in made],
                               "n_items": sum(got.items.values()), "judge_model": judge_model,
                               "baseline": config.for_role(got.baseline).model,
                               "run": Path(s.out).resolve().name, "version": version(s),
                               "released": not (s.character_data or s.scene_data)},
                        systems=[x.name for x in got.systems])
    summary = done.scores("no_winner", "judge_asked_again", "ended_by_scene", items=got.items,
                          baseline=s.baseline, judge=judge_model)
    return finish_run(s.out, stages, s, "rpbench_auto", rpbench_auto=summary,
                      rpbench_auto_settings=s.recorded(s.out))
