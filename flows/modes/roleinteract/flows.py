"""RoleInteract's flow: answers (per model) -> item scores, the nine-column table and the report."""

from __future__ import annotations

from prefect import flow

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.scale.runners import stage_runner
from rpbench.flows.modes.roleinteract.checks import check_run
from rpbench.flows.modes.roleinteract.settings import RoleInteractSettings
from rpbench.tasks.llm.given import read_answers
from rpbench.tasks.modes.roleinteract.answering import answer_all, given_answers
from rpbench.tasks.modes.roleinteract.selection import select
from rpbench.tasks.modes.roleinteract.tables import ANSWERS

WORKERS = 4


@stage("roleinteract-answers", batch=True,
       roles=lambda p: [p["role"]] if p["role"] else [], inputs=("data", "given"))
async def answers(run: StageRun, data: list[str], columns: list[str], languages: list[str], limit: int | None,
                  drop_unanswerable: bool, role: str | None, given: str | None, name: str, reask: int = 0,
                  with_instruction: bool = False) -> StageResult:
    """``name``'s answers: asked of the model bound to ``role``, or read from the file ``given``."""
    items = select(data, columns, languages, limit, drop_unanswerable)[0]
    if given is not None:
        made = given_answers(items, read_answers(given), name, given)
    else:
        assert role is not None
        async with run.gateway() as gateway:
            made = await answer_all(gateway, items, role, name,
                                    run.progress.track(f"answers of {name}", len(items)), attempts=1 + reask,
                                    with_instruction=with_instruction)
    return run.written(ANSWERS, made, unreadable=sum(a.status == "unparsed" for a in made))


@flow(name="rpbench-roleinteract", log_prints=True, task_runner=stage_runner(WORKERS))
@flow_body
def roleinteract(s: RoleInteractSettings, stages: Stages) -> dict:
    """RoleInteract: each model answers every question; the nine-column table and its average."""
    systems = checked(check_run, s)
    common = {"data": s.data, "columns": s.columns, "languages": s.languages, "limit": s.limit,
              "drop_unanswerable": s.drop_unanswerable}
    made = stages.map(answers, [{**common, "reask": s.reask, "with_instruction": s.with_instruction,
                                 **system.params()} for system in systems])
    answered = [m.path("answers") for m in made]
    done = stages.score("roleinteract", {**common, "answers": answered, "policy": s.policy, "scoring": s.scoring},
                        systems=[x.name for x in systems])
    summary = done.scores("table", policy=s.policy, scoring=s.scoring)
    return finish_run(s.out, stages, s, "roleinteract", roleinteract=summary,
                      roleinteract_settings=s.recorded(s.out))
