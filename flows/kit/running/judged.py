"""A judged benchmark's stage bodies and flow body, as the kit gives them: a judged mode's own stages and flow
are each a few lines that hand these its items, its templates and its names (see ``flows/modes/rubric``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rpbench import prompts
from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.front.judged import JudgedSettings, check_judged
from rpbench.flows.kit.front.systems import slug
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.stage import StageResult, StageRun
from rpbench.flows.kit.running.stages import Stages
from rpbench.storage.schemas import FAILURES, TableSpec
from rpbench.storage.tables import read_records
from rpbench.tasks.judged.rubric import (
    ANSWERS,
    GRADES,
    Grade,
    JudgeAsk,
    JudgedAnswer,
    JudgedItem,
    answer_row,
    failure_row,
    grade_schema,
    grades_of,
)
from rpbench.tasks.llm import Request
from rpbench.tasks.llm.given import given_reply, read_answers
from rpbench.tasks.llm.requests import Message

# The grading requests for a system's answers, given the model the judge is (a release may ask models apart).
Asks = Callable[[Sequence[JudgedAnswer], str], list[JudgeAsk]]


def judge_of(params: Mapping[str, Any]) -> list[str]:
    """The role a grading stage calls: a stage's ``roles=``."""
    return [params["judge"]]


def in_character(template: str) -> Callable[[JudgedItem], list[Message]]:
    """An item as the model under test is asked it: the system prompt rendered from ``template`` (with
    ``persona`` and ``item``, in the item's language), the prompt as the user's message."""
    def asked(item: JudgedItem) -> list[Message]:
        system = prompts.render(template, item.language, persona=item.persona, item=item).text
        return [{"role": "system", "content": system}, {"role": "user", "content": item.prompt}]
    return asked


def by_rubric(template: str, low: int, high: int) -> Asks:
    """One grading request per answer: a user message rendered from ``template`` (with ``persona``, ``prompt``,
    ``answer``, ``dimension``, ``low`` and ``high``, in the item's language), read against the scale's schema."""
    def asks(answers: Sequence[JudgedAnswer], _judge_model: str) -> list[JudgeAsk]:
        return [JudgeAsk((a.item_id,), [{"role": "user", "content": prompts.render(
            template, a.language, persona=a.persona, prompt=a.prompt, answer=a.text, dimension=a.dimension,
            low=low, high=high).text}], grade_schema(1, low, high)) for a in answers]
    return asks


async def answer_judged(run: StageRun, items: Sequence[JudgedItem], role: str | None, given: str | None, name: str,
                        asked: Callable[[JudgedItem], list[Message]], field: str = "answer") -> StageResult:
    """System ``name``'s answers to ``items``: each asked of the model bound to ``role`` as ``asked`` makes it,
    or read from the answer file ``given`` (under ``field``). Writes the answers and the failures."""
    if given is not None:
        texts = read_answers(given, field=field)
        results = [given_reply(texts.get(i.id), name, missing=f"{given} has no answer for this item") for i in items]
    else:
        assert role is not None
        requests: list[Request[Any]] = [Request(role, asked(i), tag=f"answer:{i.id}") for i in items]
        async with run.gateway() as gateway:
            results = await gateway.run_all(requests, roles=[role])
    rows = [answer_row(i, r.text, name) for i, r in zip(items, results, strict=True) if r.ok]
    failed = [failure_row(run.spec.name, name, i.id, "answer_failed", r.error)
              for i, r in zip(items, results, strict=True) if not r.ok]
    run.write(ANSWERS, rows)
    run.write(FAILURES, failed)
    return run.result(answers=len(rows), failed=len(failed))


async def grade_judged(run: StageRun, answers: str, judge: str, judge_name: str, asks: Asks) -> StageResult:
    """The judge bound to ``judge`` (named ``judge_name`` in the tables) grading every answer of the table
    ``answers``, in the requests ``asks`` makes of them; a reply whose grades cannot be read is asked again, then
    each answer it held is a counted failure. Writes the grades and the failures."""
    given = read_records(answers, ANSWERS)
    by_id = {a.item_id: a for a in given}
    async with run.gateway() as gateway:
        plan = asks(given, gateway.model_of(judge))
        requests: list[Request[Any]] = [Request(judge, a.messages, schema=a.schema,
                                                tag=f"grade:{','.join(a.item_ids)}") for a in plan]
        results = await gateway.run_all(requests, roles=[judge])
    asked = {i for a in plan for i in a.item_ids}
    rows: list[Grade] = []
    failed = []
    for ask, r in zip(plan, results, strict=True):
        for k, item_id in enumerate(ask.item_ids):
            answer = by_id[item_id]
            if r.ok:
                score, reasoning = grades_of(r.parsed)[k]
                rows.append(Grade(item_id=item_id, model=answer.model, judge=judge_name, score=float(score),
                                  reasoning=reasoning, reply=r.text))
            else:
                failed.append(failure_row(run.spec.name, answer.model, item_id, "grade_failed",
                                          f"{judge_name}: {r.error}"))
    failed += [failure_row(run.spec.name, a.model, a.item_id, "grade_failed", f"{judge_name}: not asked (what its "
                           "grading request needs is missing: see the failures before this stage)")
               for a in given if a.item_id not in asked]
    run.write(GRADES, rows)
    run.write(FAILURES, failed)
    return run.result(grades=len(rows), failed=len(failed))


async def prepare_judged(run: StageRun, role: str, parts: Mapping[str, Sequence[JudgedItem]],
                         ask: Callable[[Sequence[JudgedItem]], Request[Any]],
                         row: Callable[[str, Sequence[JudgedItem], Any], Any], table: TableSpec[Any]) -> StageResult:
    """The body of a stage run once before the grading (``run_judged``'s ``prepare``: score examples for each
    grading request's questions): one request of ``role`` per part, as ``ask`` makes it; its reply made the
    part's row by ``row`` (which may raise ValueError: too little in it), else each item of the part a counted
    failure (its answers are then not graded, and counted again there). Writes ``table`` and the failures."""
    requests = [ask(p) for p in parts.values()]
    async with run.gateway() as gateway:
        results = await gateway.run_all(requests, roles=[role])
    rows, failed = [], []
    for (key, part), r in zip(parts.items(), results, strict=True):
        error = r.error
        if r.ok:
            try:
                rows.append(row(key, part, r))
                continue
            except ValueError as exc:
                error = str(exc)
        failed += [failure_row(run.spec.name, role, i.id, "prepare_failed", error) for i in part]
    run.write(table, rows)
    run.write(FAILURES, failed)
    return run.result(**{table.name: len(rows)}, failed=len(failed))


def run_judged(s: JudgedSettings, stages: Stages, mode: str, flow: str, answers: Any, grades: Any,
               prepare: tuple[Any, str] | None = None, make: tuple[Any, str] | None = None) -> Any:
    """A judged mode's flow: the input check, every system's answers (the mode's stage ``answers``, given the
    settings' ``item_params``), each judge's grades of them (its stage ``grades``, given ``grade_params``), the
    report. ``prepare``: a stage run once before the grading, for every system (score examples written for the
    questions), and the name of its table, which each grading stage is given as ``prepared``. ``make``: a stage
    that writes the items first (questions written for personas), and the name of what it wrote, given to every
    later stage as ``items``."""
    inputs = checked(check_judged, s)
    params = s.item_params()
    if make is not None:
        params["items"] = stages.run(make[0], **params).path(make[1])
    made = stages.map(answers, [{**params, **x.params()} for x in inputs.systems])
    before = [stages.run(prepare[0], **params, **s.grade_params())] if prepare else []
    extra = {"prepared": before[0].path(prepare[1])} if prepare else {}
    graded = stages.map(grades, [{"answers": m.path(ANSWERS.name), "judge": role, "judge_name": name,
                                  "shard": f"{x.shard}--{slug(name)}", **extra, **s.grade_params()}
                                 for x, m in zip(inputs.systems, made, strict=True)
                                 for name, role in inputs.judges.items()])
    done = stages.score(mode, {"answers": [m.path(ANSWERS.name) for m in made],
                               "grades": [g.path(GRADES.name) for g in graded],
                               "failures": [r.path(FAILURES.name) for r in (*made, *before, *graded)],
                               "judges": list(inputs.judges), "rule": s.combine},
                        systems=[x.name for x in inputs.systems])
    return finish_run(s.out, stages, s, flow, **{flow: done.scores()})  # type: ignore[arg-type]
