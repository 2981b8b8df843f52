"""PersonaGym's own questions for personas of one's own, written as its ``run.py`` writes them: the settings a
persona is likely to be found in, picked from the release's list (``select_settings``), then for each task
questions for those settings (``gen_questions``: as many as its ``num_questions``, the release's task
description in the prompt), each reply read as ``extract_list`` reads it.

The release samples again, up to five times, a task whose reply is not a list of exactly that many questions,
and then keeps whatever the last reply gave (or, if no reply could be read at all, fails with a NameError).
rpbench asks the same request as new samples (seeded: ``seed`` + the sample's index, the call cache keeping
each), up to the release's number of tries, and a task still without its questions is a counted failure, never
a short or a borrowed list."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Sequence
from typing import Any

from rpbench.prompts import python_text
from rpbench.prompts.python_text import ReleaseLayoutError
from rpbench.tasks.core.records import Failure
from rpbench.tasks.llm.requests import CallResult, Model, Request
from rpbench.tasks.modes.personagym import release
from rpbench.tasks.modes.personagym.grading import read_personas

ASKER = "personagym-questions"  # the role that writes them (run.py's SETTINGS_MODEL and QUESTION_MODEL)


def _prompt(function: str) -> python_text.Template:
    (node,) = python_text.assignments(python_text.function(release.text(release.RUN), function, release.RUN),
                                      "settings_prompt" if function == "select_settings" else "question_prompt")
    return python_text.template(node, release.RUN)


def defaults() -> tuple[int, int]:
    """``gen_questions``' ``num_questions`` and how often it asks for a task's questions (``range(5)``)."""
    fn = python_text.function(release.text(release.RUN), "gen_questions", release.RUN)
    n = fn.args.defaults[-1]
    tries = [c.args[0] for c in python_text.calls(fn, "range") if len(c.args) == 1]
    if not tries:
        raise ReleaseLayoutError(f"{release.RUN}: gen_questions asks no range(N) times")
    return int(python_text.literal(n, release.RUN)), int(python_text.literal(tries[0], release.RUN))


def read_list(reply: str) -> list[Any]:
    """``extract_list``: the reply less its code fences (the texts its ``replace`` calls take out), read as a
    Python literal; anything but a list is a ValueError (asked again)."""
    fn = python_text.function(release.text(release.RUN), "extract_list", release.RUN)
    text = reply
    for cut in [python_text.literal(c.args[0], release.RUN) for c in python_text.calls(fn, "replace")]:
        text = text.replace(cut, "")
    try:
        found = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError) as exc:
        raise ValueError(f"the reply is not a Python list ({type(exc).__name__})") from None
    if not isinstance(found, list) or not all(isinstance(x, str) and x.strip() for x in found):
        raise ValueError("the reply is not a Python list of texts")
    return found


def _exactly(n: int) -> Any:
    def parse(reply: str) -> list[Any]:
        found = read_list(reply)
        if len(found) != n:
            raise ValueError(f"{len(found)} questions where {n} were asked for")
        return found
    return parse


async def write_questions(model: Model, persona: str, tasks: Sequence[str], stage: str
                          ) -> tuple[dict[str, list[str]], list[Failure]]:
    """``persona``'s questions for each of ``tasks``, and the failures (a task with none after the tries)."""
    names = python_text.constant(release.text(release.TASKS), "settings_list", release.TASKS)
    described = python_text.constant(release.text(release.TASKS), "question_requirements", release.TASKS)
    n, tries = defaults()
    pick = _prompt("select_settings").fill({"persona": persona, "settings_list": names})
    picked: CallResult[Any] = await model.run(Request(ASKER, [{"role": "user", "content": pick}], parse=read_list,
                                                      tag=f"settings:{persona[:40]}"))
    if not picked.ok:
        return {}, [Failure(stage=stage, model=ASKER, item_id=f"{persona}:{t}", kind="questions_failed",
                            error=f"settings: {picked.error}") for t in tasks]
    out: dict[str, list[str]] = {}
    failed: list[Failure] = []
    for task in tasks:
        asked = _prompt("gen_questions").fill({"num_questions": n, "settings": picked.parsed, "persona": persona,
                                               "task": task, "description": described[task]})
        error = None
        for k in range(tries):  # each try a new sample of the same request, as the release's loop asks
            got: CallResult[Any] = await model.run(Request(ASKER, [{"role": "user", "content": asked}], sample_index=k,
                                          parse=_exactly(n), attempts=1, tag=f"questions:{persona[:40]}:{task}"))
            if got.ok:
                out[task] = list(got.parsed)
                break
            error = got.error
        else:
            failed.append(Failure(stage=stage, model=ASKER, item_id=f"{persona}:{task}", kind="questions_failed",
                                  error=f"{tries} tries: {error}"))
    return out, failed


async def write_all(model: Model, stage: str, personas: str, tasks: Sequence[str], **_: Any
                    ) -> tuple[dict[str, dict[str, list[str]]], list[Failure]]:
    """Every persona's questions, as files named after it (``<persona>.json``, what ``--questions`` reads), and
    the failures."""
    asked = read_personas(personas)
    written = await asyncio.gather(*(write_questions(model, p, tasks or release.tasks(), stage) for p in asked))
    return ({f"{p}.json": found for p, (found, _) in zip(asked, written, strict=True)},
            [f for _, failed in written for f in failed])
