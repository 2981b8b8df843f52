"""PersonaGym's stages and flow: the kit's judged bodies given the release's items, words and reading, and one
stage of its own, the score examples every system's grading shares."""

from __future__ import annotations

import asyncio
import dataclasses
import json

from prefect import flow

import rpbench.tasks.modes.personagym.questions as pq
from rpbench.flows.kit.running.judged import answer_judged, grade_judged, judge_of, prepare_judged, run_judged
from rpbench.flows.kit.running.quiz import system_role
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.modes.personagym.mode import PersonaGymSettings
from rpbench.storage.schemas import FAILURES
from rpbench.storage.tables import atomic_write_bytes, read_records
from rpbench.tasks.judged.rubric import judged_report
from rpbench.tasks.modes.personagym import grading as pg
from rpbench.tasks.modes.personagym.analysis import HEADLINE, beside_released

REPORT = dataclasses.replace(judged_report("rpbench personagym", "persona", 1, 5, dimensions=None,
                                           dimension_label="task", headline=HEADLINE, group_columns=False),
                             analyze=beside_released)


@stage("personagym-questions", roles=(pq.ASKER,), inputs=("personas",))
async def questions(run: StageRun, items: None, personas: str, tasks: list[str], limit: int | None,
                    generate_questions: bool) -> StageResult:
    """Each persona's questions written as ``select_settings`` and ``gen_questions`` write them."""
    asked, folder = pg.read_personas(personas), run.final_folder / "questions"
    async with run.gateway() as gateway:
        gateway.heal = False  # a short list is asked again as the next sample (questions.py), not as itself
        written = await asyncio.gather(*(pq.write_questions(gateway, p, tasks or pg.release.tasks(), run.spec.name)
                                         for p in asked))
    for persona, (found, _) in zip(asked, written, strict=True):
        atomic_write_bytes(folder / f"{persona}.json", json.dumps(found, indent=2, ensure_ascii=False).encode())
    run.write(FAILURES, [f for _, failed in written for f in failed])
    run.tables["questions"] = str(folder)
    return run.result(personas=len(asked), failed=sum(len(f) for _, f in written))


@stage("personagym-answers", roles=system_role, inputs=("items", "personas", "given"), batch=True)
async def answers(run: StageRun, items: str | None, personas: str | None, tasks: list[str], limit: int | None,
                  generate_questions: bool, role: str | None, given: str | None, name: str) -> StageResult:
    """System ``name``'s answers, each question asked of the persona as ``openai_chat_gen`` asks it."""
    chosen = pg.load_items(items, personas, tasks)[:limit]
    return await answer_judged(run, chosen, role, given, name, pg.actor_messages)


@stage("personagym-examples", roles=(pg.EXAMPLER,), inputs=("items", "personas"), batch=True)
async def examples(run: StageRun, items: str | None, personas: str | None, tasks: list[str], limit: int | None,
                   generate_questions: bool, intent: pg.Intent) -> StageResult:
    """Score examples for each five questions, as ``gen_score_examples`` asks the example model for them."""
    parts = pg.chunks(pg.load_items(items, personas, tasks)[:limit])
    return await prepare_judged(run, pg.EXAMPLER, parts, lambda part: pg.examples_request(part, intent),
                                lambda key, part, reply: pg.example_row(key, part, reply, intent), pg.EXAMPLES)


@stage("personagym-grades", roles=judge_of, inputs=("answers", "prepared"), batch=True)
async def grades(run: StageRun, answers: str, judge: str, judge_name: str, prepared: str,
                 intent: pg.Intent) -> StageResult:
    """One evaluator's grades of one system's answers, five a request, as ``score_rubrics`` asks for them."""
    written = read_records(prepared, pg.EXAMPLES)
    return await grade_judged(run, answers, judge, judge_name,
                              lambda given, model: pg.grading_asks(given, model, written, intent))


@flow(name="rpbench-personagym")
@flow_body
def personagym(s: PersonaGymSettings, stages: Stages) -> dict:
    """PersonaGym: every system answers every question, score examples are written once, each evaluator grades
    each system's answers, one report."""
    return run_judged(s, stages, "personagym", "personagym", answers, grades, prepare=(examples, pg.EXAMPLES.name),
                      make=(questions, "questions") if s.generate_questions else None)
