"""PersonaGym's items, score examples and grading requests, built as its ``run.py`` builds them.

An item is one released question of one persona for one task (``<n>:<task>:<k>``: the n-th persona, its k-th
question of the task). Its answers are graded five at a time (``score_answers`` steps by 5), in the persona's
order: for each five, the example model first writes score examples for the five questions (``gen_score_examples``:
one request holding a score-example prompt per question), then each evaluator grades the five answers in one
request (``format_rubrics``: the task's rubric filled per answer; ``score_rubrics``). What the release does and
the paper means differ in three places, and ``intent`` picks (the default is the code's):

- ``release``: each answer's ``{score_example}`` is ``examples[i]``, the i-th *character* of the processed
  examples text; ``{rubrics}`` is filled with the Python list of rubrics (its repr: quotes and ``\\n`` escapes);
  the grading system prompt reaches only a judge ``run_model`` routes down its OpenAI branch (EVAL_2, a Llama
  model, gets none).
- ``paper``: each answer gets its own question's examples (``parse_full_examples``), the rubrics are joined as
  text, and every judge gets the system prompt.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rpbench.prompts.releases import require
from rpbench.storage.schemas import TableSpec
from rpbench.storage.user_files import read_user_text
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import Record
from rpbench.tasks.judged.rubric import JudgeAsk, JudgedAnswer, JudgedItem, pattern_grades
from rpbench.tasks.llm.requests import Message, Request
from rpbench.tasks.llm.structured import StatedInPrompt
from rpbench.tasks.modes.personagym import release

Intent = Literal["release", "paper"]


def read_personas(path: str) -> list[str]:
    """A file of personas as ``--persona_list`` takes them: a JSON list of texts."""
    try:
        found = json.loads(read_user_text(path, "a file of personas"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(found, list) or not found:
        raise InputError(f"{path}: a file of personas is a JSON list of texts, not {type(found).__name__}")
    for k, p in enumerate(found, 1):
        if not isinstance(p, str) or not p.strip():
            raise InputError(f"{path}: record {k}: a persona is a text")
    return found


def _questions(persona: str, folder: str | None) -> tuple[str, Any]:
    if folder is None:
        where = release.questions_of(persona)
        return where, json.loads(release.text(where))
    where = str(Path(folder) / f"{persona}.json")
    if not Path(where).is_file():
        raise InputError(f"{where}: no questions for the persona '{persona[:60]}' (a file named after it)")
    try:
        return where, json.loads(read_user_text(where, "a file of questions"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not JSON ({exc.msg}, line {exc.lineno})") from None


def load_items(items: str | None = None, personas: str | None = None, tasks: Sequence[str] = (),
               generate_questions: bool = False) -> list[JudgedItem]:
    """Every question of every persona for ``tasks`` (default: the release's five), in the release's order:
    the released personas and benchmark-v1 questions, or a file of one's own ``personas`` and a folder of their
    questions, ``items`` (``<persona>.json``: {task: [question, ...]}, every task there). The release's files
    are checked first: every word sent comes from them."""
    require([release.RELEASE])
    questions, known = items, release.tasks()
    unknown = [t for t in tasks if t not in known]
    if unknown:
        raise InputError(f"--task: no task '{unknown[0]}' (PersonaGym's: {', '.join(known)})")
    if generate_questions and (personas is None or questions is None):  # to be written: none yet
        if personas is None:
            raise InputError("--generate-questions writes the questions of --personas: give them (a JSON list)")
        read_personas(personas)
        return []
    if personas is not None and questions is None:
        raise InputError("--personas: give their questions too (--questions FOLDER of <persona>.json), or "
                         "--generate-questions to write them as the release does")
    out: list[JudgedItem] = []
    for n, persona in enumerate(release.personas() if personas is None else read_personas(personas), 1):
        where, found = _questions(persona, questions)
        if not isinstance(found, dict):
            raise InputError(f"{where}: a file of questions is a JSON object of task -> questions")
        for task in tasks or known:  # every task the run asks (a file written for one task holds only it)
            asked = found.get(task)
            if not isinstance(asked, list) or not asked or not all(isinstance(q, str) and q.strip() for q in asked):
                raise InputError(f"{where}: field '{task}': {'missing' if task not in found else 'not a list of texts'}"
                                 " (every task has questions)")
        extra = [k for k in found if k not in known]
        if extra:
            raise InputError(f"{where}: field '{extra[0]}': no such task (PersonaGym's: {', '.join(known)})")
        out += [JudgedItem(id=f"{n}:{task}:{k}", persona=persona, prompt=q, group=persona, dimension=task)
                for task in (tasks or known) for k, q in enumerate(found[task], 1)]
    return out


def chunk_of(item_id: str) -> str:
    """The grading request an item's answer goes in: its persona, its task, its place in fives."""
    n, task, k = item_id.rsplit(":", 2)
    return f"{n}:{task}:{(int(k) - 1) // release.grades_per_request()}"


def chunks(items: Sequence[Any]) -> dict[str, list[Any]]:
    """Items (or answers) by grading request, each in question order."""
    out: dict[str, list[Any]] = {}
    for x in items:
        out.setdefault(chunk_of(getattr(x, "id", None) or x.item_id), []).append(x)
    return out


def actor_messages(item: JudgedItem) -> list[Message]:
    """An item as ``openai_chat_gen`` asks it of the persona: the persona prompt, then the question."""
    return [{"role": "system", "content": release.persona_prompt().fill({"persona": item.persona})},
            {"role": "user", "content": item.prompt}]


def _filled(outline: str, rubrics: list[str], intent: Intent) -> str:
    # str.format puts the list's repr where the release's code passes the list; the paper means the text.
    return outline.format(rubrics=rubrics if intent == "release" else "\n\n".join(rubrics))


# -- score examples ----------------------------------------------------------------------------------------
class ScoreExample(Record):
    """The score examples written for one grading request's questions, as each answer's rubric takes them."""

    chunk: str
    item_ids: list[str]
    reply: str
    examples: list[str]  # one per item, in order: what its rubric's {score_example} is filled with


class ExampleReply(StatedInPrompt):
    """The example model's reply: read as ``process_examples`` reads it (its prompt asks for the release's own
    layout); a role asked for structured replies answers the examples per question in JSON."""

    examples: list[str] = Field(min_length=1, max_length=10)  # per question (``parse_full_examples``'s parts)
    whole: str = Field(default="", max_length=20000)  # the reply as ``process_examples`` makes it

    @classmethod
    def from_reply(cls, text: str) -> ExampleReply:
        try:
            return cls.model_validate_json(text.strip())
        except ValueError:
            pass
        read = release.examples_reader()
        parts, whole = [read(p) for p in release.split_examples(text)], read(text)
        if not whole:
            raise ValueError("no score examples ('Score N: Response - ...') in the reply")
        return cls(examples=parts, whole=whole)


EXAMPLES = TableSpec("score_examples", 1, ScoreExample)
EXAMPLER = "personagym-examples"  # the role that writes them (run.py's EXAMPLE_MODEL)


def examples_request(chunk: Sequence[JudgedItem], intent: Intent) -> Request[ExampleReply]:
    """``gen_score_examples``: one score-example prompt per question, filled into the parallel prompt."""
    outline, asked = release.text(release.EXAMPLES_PROMPT), release.text(release.SCORE_PROMPT)
    rubric = release.rubric(chunk[0].dimension)
    prompts = [asked.format(persona=i.persona, question=i.prompt, rubric=rubric) for i in chunk]
    return Request(EXAMPLER, [{"role": "user", "content": _filled(outline, prompts, intent)}], schema=ExampleReply,
                   tag=f"examples:{chunk_of(chunk[0].id)}")


def example_row(chunk: str, items: Sequence[JudgedItem], reply: Any, intent: Intent) -> ScoreExample:
    """The examples each item's rubric gets: under ``release`` the i-th character of the whole reply as
    ``process_examples`` makes it, under ``paper`` its own question's part. Too few of either: ValueError."""
    text, parsed = reply.text, reply.parsed
    if intent == "release":
        own = list((parsed.whole or "\n\n".join(parsed.examples))[:len(items)])
    else:
        own = parsed.examples[:len(items)]
    if len(own) < len(items):
        raise ValueError(f"score examples for {len(own)} of the {len(items)} questions")
    return ScoreExample(chunk=chunk, item_ids=[i.id for i in items], reply=text, examples=own)


# -- grading ---------------------------------------------------------------------------------------------
def grading_asks(answers: Sequence[JudgedAnswer], judge_model: str, intent: Intent,
                 prepared: Sequence[ScoreExample]) -> list[JudgeAsk]:
    """``format_rubrics`` and ``score_rubrics``: per grading request, the task's rubric filled for each answer
    with its score example, the rubrics filled into the grading prompt, the system prompt as the judge's route
    passes it; read as ``parse_evaluations`` and ``parse_rubric`` read it."""
    by_item = {i: e for row in prepared for i, e in zip(row.item_ids, row.examples, strict=True)}
    outline, system = release.text(release.GRADING_PROMPT), release.text(release.GRADING_SYSTEM)
    asks = []
    for part in chunks(answers).values():
        ready = [a for a in part if a.item_id in by_item]  # a question with no examples is not graded (counted)
        if not ready:
            continue
        rubric, (low, high) = release.rubric(ready[0].dimension), release.scale(ready[0].dimension)
        filled = [rubric.format(persona=a.persona, question=a.prompt, response=a.text, score_example=by_item[a.item_id])
                  for a in ready]
        messages: list[Message] = [{"role": "user", "content": _filled(outline, filled, intent)}]
        if intent == "paper" or release.sends_system(judge_model):
            messages.insert(0, {"role": "system", "content": system})
        asks.append(JudgeAsk(tuple(a.item_id for a in ready), messages, pattern_grades(
            len(ready), low, high, release.score_pattern(), release.evaluation_pattern())))
    return asks

