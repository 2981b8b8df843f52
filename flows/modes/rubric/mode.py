"""The rubric benchmark's spec and settings: what a user sees before anything heavy is imported."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from rpbench.flows.kit.front.judged import JudgedSettings, judged_mode
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


# The kit's judged spec: its tables and scoring, `rpbench rubric run` from the settings, the flow flows:rubric.
RUBRIC = judged_mode(
    "rubric", "In-character replies graded 1-5 against a rubric by a judge; mean grade per character.",
    {"rubric-actor": Role("replies in character to a prompt", settings={"temperature": 0.7, "max_tokens": 512}),
     "rubric-judge": Role("grades a reply against the rubric, 1 to 5",
                          settings={"temperature": 0.0, "max_tokens": 512})},
    RubricSettings, report="rpbench.flows.modes.rubric.flows:REPORT")
