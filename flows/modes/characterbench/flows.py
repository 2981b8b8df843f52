"""CharacterBench's flow: replies (per system) -> judgments (per system) -> the kit's report stage, scored by
``analysis.scored`` (its scores, the judge's agreement with people)."""

from __future__ import annotations

from prefect import flow

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.scale.runners import stage_runner
from rpbench.flows.modes.characterbench.checks import check_run
from rpbench.flows.modes.characterbench.settings import CharacterBenchSettings
from rpbench.storage.tables import read_records
from rpbench.tasks.llm.given import given_results
from rpbench.tasks.modes.characterbench.answering import answer_all, released_replies, replies_of
from rpbench.tasks.modes.characterbench.judging import judge_all
from rpbench.tasks.modes.characterbench.loader import load_items
from rpbench.tasks.modes.characterbench.tables import JUDGMENTS, REPLIES


@stage("characterbench-replies", batch=True, roles=lambda p: [p["role"]] if p["role"] else [], inputs=("data", "given"))
async def replies(run: StageRun, data: list[str], language: str, limit: int | None, role: str | None,
                  given: str | None, name: str) -> StageResult:
    """``name``'s replies: asked of the model bound to ``role``, read from the file ``given``, or (neither)
    the released systems' own."""
    items = load_items(data, [language], limit)
    if role is not None:
        async with run.gateway() as gateway:
            made = await answer_all(gateway, items, role, name, run.progress.track(f"replies of {name}", len(items)))
    elif given is not None:
        made = replies_of(items, given_results([i.item_id for i in items], given, name), name)
    else:
        made = released_replies(items)
    return run.written(REPLIES, made)


@stage("characterbench-judgments", batch=True, roles=lambda p: [p["judge"]], inputs=("data", "replies"))
async def judgments(run: StageRun, data: list[str], language: str, limit: int | None, replies: str, judge: str,
                    output: str, name: str) -> StageResult:
    """The judge on every reply of ``name`` that was made."""
    items = load_items(data, [language], limit)
    made = read_records(replies, REPLIES)
    async with run.gateway() as gateway:
        judged = await judge_all(gateway, items, made, judge, output,  # type: ignore[arg-type]
                                 run.progress.track(f"judgments of {name}", len(made)))
    return run.written(JUDGMENTS, judged)


@flow(name="rpbench-characterbench", log_prints=True, task_runner=stage_runner(4))
@flow_body
def characterbench(s: CharacterBenchSettings, stages: Stages) -> dict:
    """CharacterBench: each system replies in character (or the released replies are read), the judge scores
    each reply on its dimension; CharacterBench's scores and the judge's agreement with people."""
    systems, judge, n = checked(check_run, s)
    common = {"data": s.data, "language": s.language, "limit": s.limit}
    made = stages.map(replies, [{**common, **x.params()} for x in systems])
    judged = stages.map(judgments, [{**common, "replies": m.path("replies"), "judge": judge,
                                     "output": s.judge_output, "name": x.name, "shard": x.shard}
                                    for m, x in zip(made, systems, strict=True)])
    tables = {"replies": [m.path("replies") for m in made], "judgments": [j.path("judgments") for j in judged]}
    done = stages.score("characterbench", {**common, **tables, "judge": judge},
                        systems=[x.name for x in systems if x.role or x.answers])
    return finish_run(s.out, stages, s, "characterbench", characterbench=done.scores(items=n),
                      characterbench_settings=s.recorded(s.out))
