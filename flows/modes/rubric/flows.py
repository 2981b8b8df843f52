"""The rubric benchmark's stages and flow: the kit's judged stages, from its settings (templates, scale, roles)."""

from __future__ import annotations

from rpbench.flows.kit.running.judged import judged_flow
from rpbench.flows.modes.rubric.mode import RubricSettings
from rpbench.tasks.judged.rubric import judged_report

REPORT = judged_report("rpbench rubric", "character", RubricSettings.low, RubricSettings.high)
# rubric-answers (each item asked in character: prompts/rubric/actor), rubric-grades (each answer graded by each
# judge: prompts/rubric/judge), the report.
rubric = judged_flow("rubric", RubricSettings)
