"""PersonaGym's spec and settings: what a user sees before anything heavy is imported."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from rpbench.flows.kit.front.judged import JudgedSettings, judged_mode
from rpbench.flows.kit.front.registry import smoke_run
from rpbench.flows.kit.front.settings import MaybeInputPath, OutputFolder, cli
from rpbench.samples import sample_path
from rpbench.tasks.modes.personagym.roles import ROLES


class PersonaGymSettings(JudgedSettings):
    """PersonaGym: a model answers each persona's questions in character, an example model writes score examples,
    two evaluators (--judge) grade each five answers by the task's rubric. The tasks' mean grades and PersonaScore
    (their mean), with 95% intervals, beside the six released models'."""

    item_unit: ClassVar[str] = "questions (in order: persona, task, question)"
    role: ClassVar[str] = "personagym-actor"
    judges_default: ClassVar[tuple[str, ...]] = ("personagym-evaluator-1", "personagym-evaluator-2")
    group_by: ClassVar[str] = "persona"
    answers_layout: ClassVar[str] = ('a JSONL file of {"id": "<n>:<task>:<k>" (the n-th persona\'s k-th question '
                                     'of the task, from 1), "answer": the reply\'s text}')

    items: MaybeInputPath = Field(default=None, json_schema_extra=cli("--questions"), description="A folder of "
                                  "<persona>.json ({task: [question, ...]}) for --personas. Default: the release's.")
    personas: MaybeInputPath = Field(default=None, description="A JSON list of personas. Default: the release's 200.")
    tasks: list[str] = Field(default_factory=list, json_schema_extra=cli("--task"), description="Only this task "
                             "(repeat): Expected Action, Toxicity, Linguistic Habits, Persona Consistency, Action "
                             "Justification. Default: all five.")
    generate_questions: bool = Field(default=False, description="Write the --personas' questions as the release "
                                     "does, seeded, into <out>/questions/ (reuse them with --questions).")
    intent: Literal["release", "paper"] = Field(default="release", description="release: as its code grades (a "
                                                "score example one character, the rubrics a list's repr, EVAL_2 with "
                                                "no system prompt); paper: as the paper means.")
    out: OutputFolder = Field(default="runs/personagym", description="Folder for the run's tables, report, viewer.")

    items_reader: ClassVar[str] = "rpbench.tasks.modes.personagym.grading:load_items"
    item_fields: ClassVar[tuple[str, ...]] = ("personas", "tasks", "generate_questions")
    grade_fields: ClassVar[tuple[str, ...]] = ("intent",)
    helpers: ClassVar[dict[str, str]] = {"personagym-examples": "", "personagym-questions": "generate_questions"}
    makes_items: ClassVar[str] = "generate_questions"  # with --personas (grading.load_items says so)


SAMPLES = ("--personas", str(sample_path("personagym", "personas.json")), "--questions",
           str(sample_path("personagym", "questions")))
PERSONAGYM = judged_mode(
    "personagym", "PersonaGym: personas answer their questions; two evaluators grade each five against a rubric per "
    "task. PersonaScore and the tasks' grades with intervals.", ROLES, PersonaGymSettings, releases="release:RELEASE",
    # Two personas of the shipped samples, a question per task, a model and a file of answers.
    smoke=smoke_run("personagym", *SAMPLES, "--model", "personagym-actor", "--answers",
                    f"sample={sample_path('personagym', 'answers.jsonl')}"))
