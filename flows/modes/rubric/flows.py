"""The rubric benchmark's stages and flow: the kit's judged bodies given this mode's templates and names."""

from __future__ import annotations

from prefect import flow

from rpbench.flows.kit.running.judged import answer_judged, by_rubric, grade_judged, in_character, judge_of, run_judged
from rpbench.flows.kit.running.quiz import system_role
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.modes.rubric.mode import RubricSettings as S
from rpbench.tasks.judged.rubric import judged_report, read_judged_items

REPORT = judged_report("rpbench rubric", "character", S.low, S.high)


@stage("rubric-answers", templates=("rubric/actor",), roles=system_role, inputs=("items", "given"), batch=True)
async def answers(run: StageRun, items: str, limit: int | None, role: str | None, given: str | None,
                  name: str) -> StageResult:
    """System ``name``'s replies: each item asked of the model bound to ``role`` in character, or read from
    the file ``given``."""
    chosen = read_judged_items(items, S.group_by)[:limit]
    return await answer_judged(run, chosen, role, given, name, in_character(S.actor_prompt), S.answer_field)


@stage("rubric-grades", templates=("rubric/judge",), roles=judge_of, inputs=("answers",), batch=True)
async def grades(run: StageRun, answers: str, judge: str, judge_name: str) -> StageResult:
    """One judge's grades of one system's replies, against the rubric."""
    return await grade_judged(run, answers, judge, judge_name, by_rubric(S.judge_prompt, S.low, S.high))


@flow(name="rpbench-rubric")
@flow_body
def rubric(s: S, stages: Stages) -> dict:
    """The rubric benchmark: every system replies to every item, every judge grades the replies, one report."""
    return run_judged(s, stages, "rubric", "rubric", answers, grades)
