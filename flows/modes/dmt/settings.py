"""The parameters of DMT-RoleBench's flow (flow signature, CLI options and deployment parameters in one place)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from rpbench.flows.kit.front.settings import EvalSettings, InputPath, OutputFolder, cli
from rpbench.tasks.core.errors import close_match
from rpbench.tasks.modes.dmt.catalog import FORMATS


class DmtSettings(EvalSettings):
    """Each model plays every seed's role in a dialogue the generator steers by topic and intent, round by
    round, until the purpose is served or --max-rounds; every round is labelled good/bad per metric; DMT-Scores."""

    item_unit: ClassVar[str] = "dialogues (seed and format) of the selection, for every model"
    answers_are: ClassVar[str] = "dialogues"
    answers_layout: ClassVar[str] = "JSONL of {\"id\": seed id/format, \"rounds\": [{\"query\", \"response\"}]}"
    judge_roles: ClassVar[tuple[str, ...]] = ("dmt-judge",)
    asks_only: ClassVar[tuple[str, ...]] = ("no_system_role", "max_regenerations")

    def helper_roles(self) -> list[str]:
        return ["dmt-generator"] if self.models else []

    seeds: InputPath = Field(json_schema_extra=cli("--seeds"),
                       description="Seeds file (YAML or JSON): role profile and type, topic, intent, first query, "
                                   "prompt formats.")
    out: OutputFolder = Field(default="runs/dmt", description="Folder for dialogues, labels, scores and report.")
    max_rounds: int = Field(default=5, ge=1, le=30, description="T: the most rounds a dialogue has (and the "
                            "prefix lengths scored).")
    max_regenerations: int = Field(default=2, ge=0, description="Times the quality check may send a query back "
                                   "before the dialogue ends there.")
    policy: Literal["carry", "exclude", "bad"] = Field(
        default="carry", description="Dialogues that end before T: carry their last score forward, exclude them "
                                     "past their end, or count the missing rounds as bad.")
    no_system_role: bool = Field(default=False, description="The models have no system role: put the role's "
                                 "prompt at the top of the first user message instead.")
    only_seeds: list[str] = Field(default_factory=list, json_schema_extra=cli("--seed-id"),
                                  description="Only these seeds (by id). Repeat. Default: all.")
    formats: list[str] = Field(default_factory=list, json_schema_extra=cli("--format"),
                               description="Only these prompt formats (minimalist, overview, detailed). Repeat. "
                                           "Default: each seed's own list.")

    @field_validator("formats")
    @classmethod
    def _known_formats(cls, v: list[str]) -> list[str]:
        unknown = [f for f in v if f not in FORMATS]
        if unknown:
            near = close_match(unknown[0], FORMATS)
            raise ValueError(f"unknown format '{unknown[0]}' ({f'did you mean {near}? ' if near else ''}use "
                             f"{', '.join(FORMATS)})")
        return v
