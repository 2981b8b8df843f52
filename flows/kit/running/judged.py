"""A judged benchmark's stage bodies and flow body, as the kit gives them: a judged mode's own stages and flow
are each a few lines that hand these its items, its templates and its names (see ``flows/modes/rubric``)."""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefect import Task, flow

from rpbench import prompts
from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.front.judged import JudgedSettings, check_judged
from rpbench.flows.kit.front.settings import path_fields
from rpbench.flows.kit.front.systems import slug
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.quiz import system_role
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.storage.schemas import FAILURES, TableSpec
from rpbench.storage.tables import atomic_write_bytes, read_records
from rpbench.tasks.core.records import Failure
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

# The grading requests for a system's answers, given the model the judge is (a release may ask models apart),
# and, as keywords, the settings' ``grade_fields`` and, after a ``Prepare`` stage, its rows as ``prepared``.
Asks = Callable[..., list[JudgeAsk]]


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


# -- a judged mode's stages and flow, made from its settings and its own functions --------------------------
@dataclass(frozen=True)
class Prepare:
    """A stage run once before the grading, for every system (PersonaGym's score examples): one request of
    ``role`` per part of the items (``parts``), made by ``ask(part, **grade fields)``; its reply the part's row
    of ``table`` by ``row(key, part, reply, **grade fields)``, which may raise ValueError. Each grading stage
    is given the rows as ``prepared``."""

    name: str  # the stage is "<mode>-<name>"
    role: str
    parts: Callable[[Sequence[JudgedItem]], Mapping[str, Sequence[JudgedItem]]]
    ask: Callable[..., Request[Any]]
    row: Callable[..., Any]
    table: TableSpec[Any]


# Files to write (name -> a JSON value) and the failures, from the gateway, the stage's name and the item fields.
Writer = Callable[..., Awaitable[tuple[dict[str, Any], list[Failure]]]]


@dataclass(frozen=True)
class Make:
    """A stage that writes the run's items first, when the settings' ``makes_items`` is on (PersonaGym's
    questions for one's own personas): ``write(gateway, stage_name, **item fields)`` gives the files, written
    as JSON into a folder ``name`` of the run's final folder that every later stage reads as ``items``.
    ``heal``: whether a reply that cannot be read is asked again as itself (False: ``write`` asks new samples
    itself)."""

    name: str  # the stage is "<mode>-<name>"
    role: str
    write: Writer
    heal: bool = True


def _module_of(hook: Any) -> str:
    """The module of a mode's function (a partial's own), or of a reference "package.module:name"."""
    if isinstance(hook, str):
        return hook.partition(":")[0]
    return str(getattr(getattr(hook, "func", hook), "__module__", __name__))


def _judged_stage(name: str, module: str, body: Callable[..., Awaitable[StageResult]], params: Sequence[str],
                  doc: str, hooks: Sequence[Any], **declared: Any) -> Task[..., Awaitable[StageResult]]:
    """``body(run, **params)`` as the stage ``name`` of the mode module ``module``. Its cache key covers the
    kit's body and, as code, the modules of the mode's own functions it calls (``hooks``) and of this kit."""
    async def run_judged_stage(run: StageRun, **given: Any) -> StageResult:
        return await body(run, **given)

    own = [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params]
    run_judged_stage.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("run", inspect.Parameter.POSITIONAL_OR_KEYWORD), *own])
    run_judged_stage.__module__, run_judged_stage.__doc__ = module, doc
    # The stage's source in its cache key is the kit's body (inspect.getsource follows __wrapped__), not this
    # one-line wrapper: an edit to the body runs the stage again. (__signature__ above is what Prefect sees.)
    run_judged_stage.__wrapped__ = body  # type: ignore[attr-defined]
    run_judged_stage.__name__ = run_judged_stage.__qualname__ = name.replace("-", "_")
    code = tuple(dict.fromkeys([__name__, *(_module_of(h) for h in hooks)]))
    return stage(name, code=lambda _params: code, **declared)(run_judged_stage)


def judged_flow(mode: str, settings: type[JudgedSettings], asked: Callable[[JudgedItem], list[Message]] | None = None,
                asks: Asks | None = None, *, prepare: Prepare | None = None, make: Make | None = None) -> Any:
    """A judged mode's stages and flow, ``rpbench-<mode>``, from its settings and functions: every system's
    answers (``<mode>-answers``: each item asked as ``asked`` makes it, by default ``in_character`` with the
    settings' ``actor_prompt``), ``prepare`` once, each judge's grades of each system's answers
    (``<mode>-grades``, in the requests ``asks`` makes, by default ``by_rubric`` with ``judge_prompt`` and the
    scale), the report. ``make`` writes the items first. Assign it in the mode's flows module, under the mode's
    flow name: deployments load it from there."""
    module = sys._getframe(1).f_globals["__name__"]  # the mode's flows module: Prefect serves the flow from there
    asked = asked or in_character(settings.actor_prompt)
    asks = asks or by_rubric(settings.judge_prompt, settings.low, settings.high)
    item_fields = ["items", *settings.item_fields]
    files = [f for f in item_fields if f in path_fields(settings)]
    grade_fields = list(settings.grade_fields)
    actor = (settings.actor_prompt,) if settings.actor_prompt else ()
    judge = (settings.judge_prompt,) if settings.judge_prompt else ()

    async def answers(run: StageRun, **p: Any) -> StageResult:
        chosen = settings.items_of(p)[:p["limit"]]
        return await answer_judged(run, chosen, p["role"], p["given"], p["name"], asked, settings.answer_field)

    async def grades(run: StageRun, **p: Any) -> StageResult:
        extra = {f: p[f] for f in grade_fields}
        if prepare is not None:
            extra["prepared"] = read_records(p["prepared"], prepare.table)
        return await grade_judged(run, p["answers"], p["judge"], p["judge_name"],
                                  lambda given, model: asks(given, model, **extra))

    answering = _judged_stage(
        f"{mode}-answers", module, answers, [*item_fields, "limit", "role", "given", "name"],
        f"System ``name``'s answers to the {settings.item_unit}, asked of the model bound to ``role`` or read from "
        "the file ``given``.", [asked, settings.items_reader or settings.__module__],
        templates=actor, roles=system_role, inputs=(*files, "given"), batch=True)
    grading = _judged_stage(
        f"{mode}-grades", module, grades, ["answers", "judge", "judge_name", *grade_fields,
                                           *(["prepared"] if prepare else [])],
        "One judge's grades of one system's answers.", [asks, *([prepare.row] if prepare else [])],
        templates=judge, roles=judge_of, inputs=("answers", *(["prepared"] if prepare else [])), batch=True)
    before = None if prepare is None else (_prepare_stage(mode, module, settings, prepare, item_fields, files),
                                           prepare.table.name)
    maker = None if make is None else (_make_stage(mode, module, settings, make, item_fields, files), make.name)

    def run_mode(s: JudgedSettings, stages: Stages) -> dict[str, Any]:
        return run_judged(s, stages, mode, mode, answering, grading, prepare=before,
                          make=maker if s.makes_items and getattr(s, s.makes_items) else None)

    run_mode.__annotations__ = {"s": settings, "stages": Stages, "return": dict[str, Any]}
    run_mode.__module__, run_mode.__name__, run_mode.__qualname__ = module, mode, mode
    run_mode.__doc__ = settings.__doc__
    return flow(name=f"rpbench-{mode}")(flow_body(run_mode))


def _prepare_stage(mode: str, module: str, settings: type[JudgedSettings], prepare: Prepare,
                   item_fields: Sequence[str], files: Sequence[str]) -> Task[..., Awaitable[StageResult]]:
    async def body(run: StageRun, **p: Any) -> StageResult:
        extra = {f: p[f] for f in settings.grade_fields}
        parts = prepare.parts(settings.items_of(p)[:p["limit"]])
        return await prepare_judged(run, prepare.role, parts, lambda part: prepare.ask(part, **extra),
                                    lambda key, part, reply: prepare.row(key, part, reply, **extra), prepare.table)

    return _judged_stage(f"{mode}-{prepare.name}", module, body, [*item_fields, "limit", *settings.grade_fields],
                         f"The {prepare.table.name} every system's grading shares, asked of ``{prepare.role}``.",
                         [prepare.ask, prepare.row, prepare.parts], roles=(prepare.role,), inputs=tuple(files),
                         batch=True)


def _make_stage(mode: str, module: str, settings: type[JudgedSettings], make: Make, item_fields: Sequence[str],
                files: Sequence[str]) -> Task[..., Awaitable[StageResult]]:
    async def body(run: StageRun, **p: Any) -> StageResult:
        folder = run.final_folder / make.name
        async with run.gateway() as gateway:
            gateway.heal = make.heal
            written, failed = await make.write(gateway, run.spec.name, **{f: p[f] for f in item_fields})
        for name, value in written.items():
            atomic_write_bytes(folder / name, json.dumps(value, indent=2, ensure_ascii=False).encode())
        run.write(FAILURES, failed)
        run.tables[make.name] = str(folder)
        return run.result(files=len(written), failed=len(failed))

    return _judged_stage(f"{mode}-{make.name}", module, body, [*item_fields, "limit"],
                         f"The run's {settings.item_unit}, written by ``{make.role}``.", [make.write],
                         roles=(make.role,), inputs=tuple(f for f in files if f != "items"))
