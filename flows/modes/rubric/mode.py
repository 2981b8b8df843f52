"""The rubric benchmark's spec and settings: what a user sees before anything heavy is imported."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from rpbench.flows.kit.front.judged import JudgedSettings
from rpbench.flows.kit.front.registry import BenchmarkMode, one_run
from rpbench.flows.kit.front.run_command import RunCommand
from rpbench.flows.kit.front.settings import OutputFolder
from rpbench.tasks.llm.config import Role


class RubricSettings(JudgedSettings):
    """Models reply in character to a prompt; a judge grades each reply 1-5 against a rubric. Mean grade per
    character and language, with 95% intervals."""

    role: ClassVar[str] = "rubric-actor"  # a model string given to --model gets this role's settings
    judges_default: ClassVar[tuple[str, ...]] = ("rubric-judge",)
    actor_prompt: ClassVar[str] = "rubric/actor"  # prompts/rubric/actor.<language>.j2: the system prompt
    judge_prompt: ClassVar[str] = "rubric/judge"  # prompts/rubric/judge.<language>.j2: the grading request
    group_by: ClassVar[str] = "character"  # the field of an item the report breaks scores down by
    out: OutputFolder = Field(default="runs/rubric", description="Folder for the answers, grades, report and viewer.")


RUBRIC = BenchmarkMode(
    name="rubric",
    description="In-character replies graded 1-5 against a rubric by a judge; mean grade per character.",
    roles={"rubric-actor": Role("replies in character to a prompt", settings={"temperature": 0.7, "max_tokens": 512}),
           "rubric-judge": Role("grades a reply against the rubric, 1 to 5",
                                settings={"temperature": 0.0, "max_tokens": 512})},
    item_table="rpbench.tasks.judged.rubric:JUDGED_SCORES",  # the kit's: one row per system and item
    score="rpbench.tasks.judged.rubric:scored",  # the kit's scoring hook: rows, failures, the viewer's samples
    report="rpbench.flows.modes.rubric.flows:REPORT",
    flows={"rubric": "flows:rubric"},
    settings={"rubric": "mode:RubricSettings"},
    checks={"rubric": "rpbench.flows.kit.front.judged:check_judged"},
    commands=RunCommand("rubric"),  # `rpbench rubric run`: its options from the settings, the headline printed
    suite=one_run("rubric"),
)
