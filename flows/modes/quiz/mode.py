"""The character quiz's spec and settings: what a user sees before anything heavy is imported."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from rpbench.flows.kit.front.quiz import QuizSettings
from rpbench.flows.kit.front.registry import BenchmarkMode, one_run
from rpbench.flows.kit.front.run_command import RunCommand
from rpbench.flows.kit.front.settings import OutputFolder
from rpbench.tasks.llm.config import Role


class CharacterQuizSettings(QuizSettings):
    """Models answer multiple-choice questions about characters (RoleEval's form); accuracy per character and
    language, with 95% intervals."""

    role: ClassVar[str] = "examinee"  # a model string given to --model gets this role's settings
    group_by: ClassVar[str] = "character"  # the field of a question the report breaks accuracy down by
    prompt: ClassVar[str] = "quiz/ask"  # prompts/quiz/ask.<language>.j2: a question's language must have one
    out: OutputFolder = Field(default="runs/quiz", description="Folder for the answers, report and viewer.")


QUIZ = BenchmarkMode(
    name="quiz",
    description="A character quiz: multiple-choice questions about characters; accuracy per character.",
    roles={"examinee": Role("answers a quiz question with an option letter",
                            settings={"temperature": 0.0, "max_tokens": 256})},
    item_table="rpbench.tasks.choices.quiz:CHOICE_ANSWERS",  # the kit's: one row per system and question
    score="rpbench.tasks.choices.quiz:scored",  # the kit's scoring hook: rows, failures, the viewer's samples
    report="rpbench.flows.modes.quiz.flows:REPORT",
    flows={"quiz": "flows:quiz"},
    settings={"quiz": "mode:CharacterQuizSettings"},
    checks={"quiz": "rpbench.flows.kit.front.quiz:check_quiz"},
    commands=RunCommand("quiz"),  # `rpbench quiz run`: its options from the settings, the headline printed
    # No smoke= : the hardening tests' scenario is worked out from the settings and samples/quiz/ (the examinee
    # and answers.jsonl on every question of questions.jsonl).
    suite=one_run("quiz"),
)
