"""The parameters of PingPong's flows (flow signature, CLI options and deployment parameters in one place)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from rpbench.flows.kit.front.settings import (
    MIN_RESAMPLES,
    EvalSettings,
    InputPath,
    OutputFolder,
    RunSettings,
    cli,
)
from rpbench.tasks.modes.pingpong.records import CRITERIA


def _weights(values: list[str]) -> list[str]:
    for v in values:
        name, eq, weight = v.rpartition("=")
        try:
            ok = bool(eq and name) and float(weight) > 0
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"'{v}' is not NAME=WEIGHT with a positive weight")
    return values


class Scoring(RunSettings):
    """How judgments become scores (shared by run and rejudge)."""

    judge_weights: list[str] = Field(default_factory=list, json_schema_extra=cli("--judge-weight"),
                                     description="JUDGE=WEIGHT: a judge's weight when judges are pooled "
                                                 "(default 1 each). Repeat.")
    criterion_weights: list[float] | None = Field(
        default=None, min_length=3, max_length=3, json_schema_extra=cli("--criterion-weight"),
        description="Weights of in_character, entertaining, fluency in the final score, in that order (give it "
                    "three times; default 0.333 each, as PingPong's code; summed as given unless --exact-mean).")
    exact_mean: bool = Field(default=False, description="The final score is the criteria's exact (weighted) mean; "
                             "PingPong's code weights each 0.333 and sums, 0.1% below it (the default).")
    resamples: int = Field(default=1000, ge=MIN_RESAMPLES, description="Bootstrap resamples for the 95% "
                           f"intervals (at least {MIN_RESAMPLES}).")
    seed: int = Field(default=0, ge=0, description="Bootstrap seed.")

    _check_weights = field_validator("judge_weights")(_weights)

    @field_validator("criterion_weights")
    @classmethod
    def _positive(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and (any(w < 0 for w in v) or sum(v) <= 0):
            raise ValueError("weights must be non-negative with a positive sum")
        return v

    def judge_weight_map(self) -> dict[str, float]:
        return {name: float(w) for name, _, w in (v.rpartition("=") for v in self.judge_weights)}

    def criterion_weight_map(self) -> dict[str, float] | None:
        return dict(zip(CRITERIA, self.criterion_weights, strict=True)) if self.criterion_weights else None


class PingPongSettings(EvalSettings, Scoring):
    """Players chat with an emulated user over every card and situation of the settings file; each judge
    scores every player turn (in character, entertaining, fluency, refusal); a leaderboard by LN score."""

    item_unit: ClassVar[str] = "conversations (character and situation) of the selection, for every model"
    answers_are: ClassVar[str] = "conversations"
    answers_layout: ClassVar[str] = ("JSONL of {\"id\": language/character/situation, \"turns\": [{\"user\", "
                                     "\"player\"}]}; v2 only")
    judge_fields: ClassVar[tuple[str, ...]] = ("judges",)
    asks_only: ClassVar[tuple[str, ...]] = ("no_system_role",)

    def helper_roles(self) -> list[str]:
        return (["tester"] if self.version == "v1" else ["interrogator"]) if self.models else []

    settings: InputPath = Field(json_schema_extra=cli("--settings"),
                          description="Settings file (YAML or JSON): character cards and situations per language, "
                                      "in rpbench's layout or PingPong's own.")
    models: list[str] = Field(default_factory=list, json_schema_extra=cli("--model", deprecated=("--player",)),
                              description="Model under test (the player): a litellm model string, or a role name. "
                                          "Repeat. (--player is the old name of this option.)")
    judges: list[str] = Field(default_factory=lambda: ["pingpong-judge"], json_schema_extra=cli("--judge"),
                              description="Judge: a role name or a model string; several are averaged. Repeat. "
                                          "(v1 has one combined tester instead, the role `tester`.)")
    out: OutputFolder = Field(default="runs/pingpong", description="Folder for conversations, judgments, report.")
    version: Literal["v1", "v2"] = Field(default="v2", description="v2: separate interrogator and judges, 1-5; "
                                         "v1: one tester that talks and grades on 1-10.")
    no_system_role: bool = Field(default=False, description="The players have no system role: put the card at "
                                 "the top of the first user message instead.")
    symmetric: bool = Field(default=False, description="Show the interrogator the whole card, not just its summary.")
    any_greeting: bool = Field(default=False, description="A card in PingPong's layout gets its greeting from "
                               "greeting or inital_message too; PingPong's code reads initial_message only, so by "
                               "default such a greeting is not sent (the run lists those cards).")
    characters: list[str] = Field(default_factory=list, json_schema_extra=cli("--character"),
                                  description="Only these characters (by name). Repeat. Default: all.")
    situations: list[str] = Field(default_factory=list, json_schema_extra=cli("--situation"),
                                  description="Only these situations (by id or first tag). Repeat. Default: all.")
    max_turns: int | None = Field(default=None, ge=1, description="Cap every situation's turns (a quick run).")

    @model_validator(mode="after")
    def _answers_need_v2(self) -> PingPongSettings:
        if self.answers and self.version == "v1":
            raise ValueError("--answers needs --version v2 (v1's tester grades as it talks)")
        return self


class RejudgeSettings(Scoring):
    """Score the stored conversations of a run with more judges (no player is called again)."""

    run: InputPath = Field(json_schema_extra=cli(argument=True), description="A PingPong run folder.")
    judges: list[str] = Field(min_length=1, json_schema_extra=cli("--judge"),
                              description="Judge to add: a role name or a model string. Repeat.")
    out: OutputFolder | None = Field(default=None, description="Where to write the rescored run. Default: the run "
                                     "folder itself, its earlier judges kept beside the new ones.")
    limit: int | None = Field(default=None, ge=1, description="The new judges judge only each model's first N "
                              "conversations (a trial of a judge); the others keep their earlier judges' scores "
                              "(each scored conversation lists its judges).")

    @model_validator(mode="after")
    def _in_place_by_default(self) -> RejudgeSettings:
        # Written into the run folder itself unless told otherwise: said here, so the folder is locked as any
        # run's output is, and a plan knows which folder the rejudge writes.
        if self.out is None:
            self.out = self.run
        return self
