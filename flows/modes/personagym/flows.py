"""PersonaGym's stages and flow: the kit's judged bodies given the release's items, words and reading, and one
stage of its own, the score examples every system's grading shares."""

from __future__ import annotations

import dataclasses
from typing import Any

from prefect import flow

from rpbench.flows.kit.running.judged import answer_judged, grade_judged, judge_of, run_judged
from rpbench.flows.kit.running.quiz import system_role
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.modes.personagym.mode import PersonaGymSettings
from rpbench.storage.schemas import FAILURES, TableSpec
from rpbench.storage.tables import read_records
from rpbench.tasks.judged.rubric import failure_row, judged_report
from rpbench.tasks.llm import Request
from rpbench.tasks.modes.personagym import grading as pg
from rpbench.tasks.modes.personagym.analysis import HEADLINE, beside_released

REPORT = dataclasses.replace(judged_report("rpbench personagym", "persona", 1, 5, dimensions=None,
                                           dimension_label="task", headline=HEADLINE, group_columns=False),
                             analyze=beside_released)
EXAMPLES = TableSpec("score_examples", 1, pg.ScoreExample)


@stage("personagym-answers", roles=system_role, inputs=("items", "personas", "given"), batch=True)
async def answers(run: StageRun, items: str | None, personas: str | None, tasks: list[str], limit: int | None,
                  role: str | None, given: str | None, name: str) -> StageResult:
    """System ``name``'s answers, each question asked of the persona as ``openai_chat_gen`` asks it."""
    chosen = pg.load_items(personas, items, tasks)[:limit]
    return await answer_judged(run, chosen, role, given, name, pg.actor_messages)


@stage("personagym-examples", roles=("personagym-examples",), inputs=("items", "personas"), batch=True)
async def examples(run: StageRun, items: str | None, personas: str | None, tasks: list[str], limit: int | None,
                   intent: pg.Intent) -> StageResult:
    """Score examples for each five questions, as ``gen_score_examples`` asks the example model for them."""
    parts = pg.chunks(pg.load_items(personas, items, tasks)[:limit])
    requests: list[Request[Any]] = [Request("personagym-examples", pg.examples_request(p, intent),
                                            schema=pg.ExampleReply, tag=f"examples:{key}") for key, p in parts.items()]
    async with run.gateway() as gateway:
        results = await gateway.run_all(requests, roles=["personagym-examples"])
    rows, failed = [], []
    for (key, part), r in zip(parts.items(), results, strict=True):
        error = r.error
        if r.ok:
            try:
                rows.append(pg.example_row(key, part, r.text, r.parsed, intent))
                continue
            except ValueError as exc:  # too few examples for its questions: none of them can be graded
                error = str(exc)
        failed += [failure_row(run.spec.name, "score examples", i.id, "examples_failed", error) for i in part]
    run.write(EXAMPLES, rows)
    run.write(FAILURES, failed)
    return run.result(examples=len(rows), failed=len(failed))


@stage("personagym-grades", roles=judge_of, inputs=("answers", "prepared"), batch=True)
async def grades(run: StageRun, answers: str, judge: str, judge_name: str, prepared: str,
                 intent: pg.Intent) -> StageResult:
    """One evaluator's grades of one system's answers, five a request, as ``score_rubrics`` asks for them."""
    written = read_records(prepared, EXAMPLES)
    return await grade_judged(run, answers, judge, judge_name,
                              lambda given, model: pg.grading_asks(given, model, written, intent))


@flow(name="rpbench-personagym")
@flow_body
def personagym(s: PersonaGymSettings, stages: Stages) -> dict:
    """PersonaGym: every system answers every question, score examples are written once, each evaluator grades
    each system's answers, one report."""
    return run_judged(s, stages, "personagym", "personagym", answers, grades, prepare=(examples, EXAMPLES.name))
