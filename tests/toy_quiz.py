"""A toy benchmark written the way every mode is wired: the worked example of "adding a benchmark".

A quiz: each model (or a file of answers) answers short questions; an answer is right when it contains the
expected word. The whole mode is this file, registered by its spec (``TOY``) from the tests; a real mode keeps
the same pieces in ``tasks/modes/<name>/`` (the work), ``flows/modes/<name>/`` (settings, checks, flow) and a
line in ``pyproject.toml``. It uses exactly the names the guide (``docs/write-a-benchmark.md``) teaches; what
the kit gives it, nothing here writes again:

- ``EvalSettings``: ``--model``, ``--answers``, ``--limit``, ``--resamples``, ``--seed`` and everything every
  run takes (``--models-file``, ``--cache``, ``--max-cost``, ``--batch``, ``--plan`` ...); its three class
  variables ``item_unit``, ``answers_layout`` and ``answers_are`` say what an item and an answer file are.
- ``evaluation_systems``: ``--model`` and ``--answers`` as one list of systems (models resolved, answer files
  read and their ids checked), each knowing its stage parameters.
- ``checked``: the input check, run once per run by the command and handed to the flow.
- ``@stage`` and ``Stages``: cached Prefect tasks handed the run's place (out, shard, models file, cache).
- ``Stages.score``: the one report stage: from the mode's scoring hook (``quiz_scores``: item rows and failures),
  the leaderboard with intervals, report.md/.html, the viewer and the UI's artifacts, from the spec.
- ``RunCommand``: ``rpbench toy-quiz run`` from the flow's settings, printing the leaderboard's headline.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pyarrow.parquet as pq
from prefect import flow
from pydantic import Field

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.front.registry import BenchmarkMode, smoke_run
from rpbench.flows.kit.front.run_command import RunCommand
from rpbench.flows.kit.front.settings import EvalSettings, InputPath, OutputFolder, cli
from rpbench.flows.kit.front.systems import System, evaluation_systems
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.storage.schemas import FAILURES, TableSpec
from rpbench.storage.tables import read_records
from rpbench.storage.user_files import jsonl_objects
from rpbench.tasks.annotation.kinds import AnnotationKind
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import Failure, Record
from rpbench.tasks.llm import Request
from rpbench.tasks.llm.given import given_reply, read_answers
from rpbench.tasks.reports.metrics import accuracy, mean_of
from rpbench.tasks.reports.spec import GroupKey, ReportSpec, Scored, Scoring

# -- the work: records, reading the questions, scoring an answer --------------------------------------------


class Question(Record):
    id: str
    question: str
    answer: str
    language: str = "en"


class QuizAnswer(Record):
    """The item table: one answer of one model to one quiz question."""

    item_id: str
    model: str
    language: str
    correct: float
    seconds: float


ANSWERS = TableSpec("quiz_answers", 1, QuizAnswer)


def read_questions(path: str) -> list[Question]:
    """The quiz, or an error naming the file, the line and the field."""
    out = []
    for where, record in jsonl_objects(path, "a quiz file", "'id', 'question' and 'answer'"):
        for field in ("id", "question", "answer"):
            if not isinstance(record.get(field), str) or not record[field].strip():
                raise InputError(f"{where}: field '{field}': {'missing' if field not in record else 'not text'}")
        out.append(Question(**{k: record[k] for k in ("id", "question", "answer", "language") if k in record}))
    return out


def scored(q: Question, text: str, model: str) -> QuizAnswer:
    # "seconds": the time to read the answer aloud at three words a second (a second metric, lower is better).
    return QuizAnswer(item_id=q.id, model=model, language=q.language,
                      correct=float(q.answer.lower() in text.lower()), seconds=len(text.split()) / 3)


# -- the spec: what a user sees before anything is imported -------------------------------------------------
SAMPLES = Path(__file__).resolve().parent / "data" / "toy_quiz"


def _quiz_tasks(folder, limit, seed):
    rows = pq.read_table(folder / "quiz_answers.parquet").to_pylist()
    return [{"task": "quiz-check", "item_id": r["item_id"], "model": r["model"], "language": r["language"],
             "rpbench_key": f"{r['item_id']}|{r['model']}|quiz-check"} for r in rows][:limit]


def _quiz_read(data, result):
    from rpbench.tasks.annotation.kinds import choice

    said = choice(result, "right")
    return ("unsure", {}) if said in (None, "unsure") else ("ok", {"item_id": data["item_id"], "right": said})


QUIZ_CHECK = AnnotationKind("quiz-check", "right", _quiz_tasks,
                            lambda language: '<View><Choices name="right" toName="q"/></View>', _quiz_read)

TOY = BenchmarkMode(
    name="toy-quiz",
    description="A quiz: how often a model is right, and how long its answers take to read.",
    roles={"quizzer": "answers the questions"},
    item_table=ANSWERS,
    report=ReportSpec("rpbench toy-quiz evaluation", Scoring(
        metrics=(accuracy("share of questions answered right"),
                 mean_of("seconds", "mean time to read the answer aloud", "seconds", higher_is_better=False,
                         interval=False)),
        groups=(GroupKey("language", "language"),),
    )),
    score="tests.toy_quiz:quiz_scores",
    annotation={"quiz-check": QUIZ_CHECK},
    flows={"toy": "tests.toy_quiz:quiz"},
    settings={"toy": "tests.toy_quiz:QuizSettings"},
    checks={"toy": "tests.toy_quiz:check_quiz"},
    commands=RunCommand("toy-quiz"),  # `rpbench toy-quiz run`: the leaderboard's headline, with its interval
    # The smallest run on its own samples, a model and a file of answers on each question (the hardening tests
    # run every registered mode's).
    smoke=smoke_run("toy-quiz", "--questions", str(SAMPLES / "questions.jsonl"), "--model", "quizzer",
                    "--answers", f"oracle={SAMPLES / 'oracle.jsonl'}"),
)


# -- settings and the input check (Prefect-free) ------------------------------------------------------------


class QuizSettings(EvalSettings):
    """Models answer a quiz; accuracy and reading time per model."""

    item_unit: ClassVar[str] = "questions"
    answers_layout: ClassVar[str] = "a JSONL file of {\"id\": question id, \"answer\": text}"
    answers_are: ClassVar[str] = "answers"

    questions: InputPath = Field(json_schema_extra=cli("--questions"),
                                 description="JSONL of {id, question, answer[, language]}.")
    out: OutputFolder = Field(default="runs/toy-quiz", description="Folder for answers and report.")


def check_quiz(s: QuizSettings) -> list[System]:
    """Every input error before any call: the quiz, the models, the answer files (their ids checked)."""
    known = {q.id: q for q in read_questions(s.questions)}
    return evaluation_systems(s, like="quizzer", known=known)


# -- the stage and the flow ---------------------------------------------------------------------------------


@stage("quiz-answers", roles=lambda p: [p["role"]] if p["role"] else [], inputs=("questions", "given"))
async def answers(run: StageRun, questions: str, limit: int | None, role: str | None, given: str | None,
                  name: str) -> StageResult:
    """``name``'s answers: asked of the model bound to ``role``, or read from the file ``given``."""
    quiz = read_questions(questions)[:limit]
    if given is not None:
        texts = read_answers(given)
        results = [given_reply(texts.get(q.id), name) for q in quiz]
    else:
        assert role is not None
        requests = [Request(role, [{"role": "user", "content": q.question}], tag=f"quiz:{q.id}") for q in quiz]
        async with run.gateway() as gateway:
            results = await gateway.run_all(requests, roles=[role])
    rows = [scored(q, r.text, name) for q, r in zip(quiz, results, strict=True) if r.ok]
    failed = [Failure(stage="quiz-answers", model=name, item_id=q.id, kind="answer_failed", error=r.error)
              for q, r in zip(quiz, results, strict=True) if not r.ok]
    run.write(ANSWERS, rows)
    run.write(FAILURES, failed)
    return run.result(answers=len(rows), failed=len(failed))


def quiz_scores(items: list[str], failures: list[str], n_items: int) -> Scored:
    """The scoring hook of the kit's report stage: the answers' rows as they are, and the failures."""
    return Scored([r for p in items for r in read_records(p, ANSWERS)],
                  [f for p in failures for f in read_records(p, FAILURES)], n_items)


@flow(name="rpbench-toy-quiz")
@flow_body
def quiz(s: QuizSettings, stages: Stages) -> dict:
    """The toy quiz: every system answers, then one report (``flow_body`` hands the run its ``Stages``; Prefect
    and deployments see the one parameter ``settings``)."""
    systems = checked(check_quiz, s)
    made = stages.map(answers, [{"questions": s.questions, "limit": s.limit, **x.params()} for x in systems])
    tables = {"items": [m.path("quiz_answers") for m in made], "failures": [m.path("failures") for m in made]}
    done = stages.score("toy-quiz", {**tables, "n_items": len(read_questions(s.questions)[:s.limit])},
                        systems=[x.name for x in systems])
    return finish_run(s.out, stages, s, "toy", toy=done.scores())
