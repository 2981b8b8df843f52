"""PersonaGym's spec and settings: what a user sees before anything heavy is imported."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from rpbench.flows.kit.front.judged import JudgedSettings
from rpbench.flows.kit.front.registry import BenchmarkMode, one_run, smoke_run
from rpbench.flows.kit.front.run_command import RunCommand
from rpbench.flows.kit.front.settings import MaybeInputPath, OutputFolder, cli
from rpbench.samples import sample_path
from rpbench.tasks.modes.personagym.roles import ROLES


class PersonaGymSettings(JudgedSettings):
    """PersonaGym: a model answers each persona's questions in character; an example model writes score examples
    and two evaluators (--judge) grade each five answers against the task's rubric. The five tasks' mean grades
    and the PersonaScore (their mean), with 95% intervals, beside the six released models'."""

    item_unit: ClassVar[str] = "questions (in order: persona, task, question)"
    role: ClassVar[str] = "personagym-actor"
    judges_default: ClassVar[tuple[str, ...]] = ("personagym-evaluator-1", "personagym-evaluator-2")
    group_by: ClassVar[str] = "persona"
    answers_layout: ClassVar[str] = ('a JSONL file of {"id": "<n>:<task>:<k>" (the n-th persona\'s k-th question '
                                     'of the task, from 1), "answer": the reply\'s text}')

    items: MaybeInputPath = Field(default=None, json_schema_extra=cli("--questions"), description="A folder of "
                                  "<persona>.json ({task: [question, ...]}, every task), with --personas. Default: "
                                  "the release's benchmark-v1.")
    personas: MaybeInputPath = Field(default=None, description="A JSON list of personas of your own. Default: the "
                                     "release's 200.")
    tasks: list[str] = Field(default_factory=list, json_schema_extra=cli("--task"), description="Only these tasks "
                             "(Expected Action, Toxicity, Linguistic Habits, Persona Consistency, Action "
                             "Justification). Repeat. Default: all five.")
    generate_questions: bool = Field(default=False, description="Write the --personas' questions as the release "
                                     "does (settings picked for each persona, then ten questions a task), seeded and "
                                     "cached, into <out>/questions/ (reuse them with --questions).")
    intent: Literal["release", "paper"] = Field(default="release", description="release: as the code grades (a "
                                                "score example is one character, the rubrics a list's repr, no system "
                                                "prompt for EVAL_2's route); paper: as the paper means.")
    out: OutputFolder = Field(default="runs/personagym", description="Folder for the answers, score examples, "
                              "grades, report and viewer.")

    items_reader: ClassVar[str] = "rpbench.tasks.modes.personagym.grading:load_items"
    item_fields: ClassVar[tuple[str, ...]] = ("personas", "tasks", "generate_questions")
    grade_fields: ClassVar[tuple[str, ...]] = ("intent",)

    def helper_roles(self) -> list[str]:
        return ["personagym-examples", *(["personagym-questions"] if self.generate_questions else [])]

    @model_validator(mode="after")
    def _questions_to_write(self) -> PersonaGymSettings:
        if self.generate_questions and (self.personas is None or self.items is not None or self.answers):
            raise ValueError("--generate-questions writes the questions of --personas (not with --questions, nor "
                             "with --answers, whose ids could name none of them yet)")
        return self


SAMPLES = ("--personas", str(sample_path("personagym", "personas.json")), "--questions",
           str(sample_path("personagym", "questions")))
PERSONAGYM = BenchmarkMode(
    name="personagym",
    description="PersonaGym: personas answer their questions; two evaluators grade each five against a rubric "
                "per task. PersonaScore and the tasks' grades with intervals.",
    roles=ROLES,
    item_table="rpbench.tasks.judged.rubric:JUDGED_SCORES",
    score="rpbench.tasks.judged.rubric:scored",
    report="rpbench.flows.modes.personagym.flows:REPORT",
    flows={"personagym": "flows:personagym"},
    settings={"personagym": "mode:PersonaGymSettings"},
    checks={"personagym": "rpbench.flows.kit.front.judged:check_judged"},
    commands=RunCommand("personagym"),
    # Two personas of the shipped samples, a question per task, a model and a file of answers.
    smoke=smoke_run("personagym", *SAMPLES, "--model", "personagym-actor", "--answers",
                    f"sample={sample_path('personagym', 'answers.jsonl')}"),
    releases="release:RELEASE",
    suite=one_run("personagym"),
)
