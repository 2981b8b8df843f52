"""A multiple-choice quiz's stage body and flow body, as the kit gives them: a quiz mode's own stage and flow
are each a few lines that hand these its prompt and its names (see ``flows/modes/quiz``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from rpbench import prompts
from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.front.quiz import QuizSettings, check_quiz
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.stage import StageResult, StageRun
from rpbench.flows.kit.running.stages import Stages
from rpbench.storage.schemas import FAILURES
from rpbench.tasks.choices.quiz import CHOICE_ANSWERS, ChoiceItem, answer_row, failure_row, letters_parser
from rpbench.tasks.llm import Request
from rpbench.tasks.llm.given import given_reply, read_answers
from rpbench.tasks.llm.requests import Message


def system_role(params: Mapping[str, Any]) -> list[str]:
    """The role a system's stage calls (none for a file of answers): a stage's ``roles=``."""
    return [params["role"]] if params.get("role") else []


def asked(template: str, q: ChoiceItem) -> list[Message]:
    """The question as it is sent: one user message rendered from ``template`` in the question's language."""
    return [{"role": "user", "content": prompts.render(template, q.language, question=q.question,
                                                       options=q.options_text(), letters=q.letters).text}]


async def answer_quiz(run: StageRun, template: str, quiz: Sequence[ChoiceItem], role: str | None,
                      given: str | None, name: str, letters: str = "lenient") -> StageResult:
    """System ``name``'s answers to ``quiz``: each question rendered from ``template`` (``<mode>/<name>``, in the
    item's language) and asked of the model bound to ``role``, or read from the answer file ``given``; the
    letters read by the policy ``letters``. Writes the answers and the failures."""
    parsers = [letters_parser(q, letters) for q in quiz]
    if given is not None:
        texts = read_answers(given)
        results = [given_reply(texts.get(q.id), name, parse=p, missing=f"{given} has no answer for this question")
                   for q, p in zip(quiz, parsers, strict=True)]
    else:
        assert role is not None
        requests: list[Request[Any]] = [Request(role, asked(template, q), tag=f"{template}:{q.id}", parse=p)
                                        for q, p in zip(quiz, parsers, strict=True)]
        async with run.gateway() as gateway:
            results = await gateway.run_all(requests, roles=[role])
    rows = [answer_row(q, r.text, cast(list[str], r.parsed), name) for q, r in zip(quiz, results, strict=True) if r.ok]
    failed = [failure_row(run.spec.name, q, name, r.error) for q, r in zip(quiz, results, strict=True) if not r.ok]
    run.write(CHOICE_ANSWERS, rows)
    run.write(FAILURES, failed)
    return run.result(answers=len(rows), failed=len(failed))


def run_quiz(s: QuizSettings, stages: Stages, mode: str, flow: str, answers: Any) -> Any:
    """A quiz mode's flow: the input check, every system's answers (the mode's stage ``answers``), the report."""
    systems = checked(check_quiz, s)
    made = stages.map(answers, [{"questions": s.questions, "limit": s.limit, **x.params()} for x in systems])
    done = stages.score(mode, {"items": [m.path(CHOICE_ANSWERS.name) for m in made],
                               "failures": [m.path(FAILURES.name) for m in made],
                               "questions": s.questions, "group": s.group_by, "limit": s.limit},
                        systems=[x.name for x in systems])
    return finish_run(s.out, stages, s, flow, **{flow: done.scores()})  # type: ignore[arg-type]
