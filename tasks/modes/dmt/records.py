"""DMT-RoleBench's records: seeds, dialogue rounds and every intermediate step, per-round labels, scores."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from rpbench.tasks.core.records import LANGUAGES, Record, Status
from rpbench.tasks.modes.dmt.catalog import ALLOCATION, FORMATS, METRICS

RoleType = Literal["fictional_character", "historical_figure", "professional_occupation", "emotional_companionship",
                   "utility_assistant", "game_npc"]
Format = Literal["minimalist", "overview", "detailed"]
Intent = Literal["identity_recognition", "knowledge_qa", "personality_trait", "knowledge_boundary",
                 "conversation_steering", "professional_skill", "game_interaction"]


class RoleProfile(Record):
    name: str = Field(min_length=1)
    overview: str = Field(min_length=1, description="One or two sentences: the overview format's prompt.")
    profile: dict[str, str] = Field(min_length=1, description="Everything else, key by key: the detailed format.")


class Seed(Record):
    """One seed: a role, a topic, an intent and the opening query; one dialogue per prompt format it lists."""

    id: str = Field(min_length=1)
    language: str = "zh"
    role_type: RoleType
    role: RoleProfile
    formats: list[Format] = Field(default_factory=lambda: list(FORMATS), min_length=1)  # type: ignore[arg-type]
    topic: str = Field(min_length=1)
    intent: Intent
    initial_query: str = Field(min_length=1)
    metrics: list[str] | None = Field(default=None, description="Judge only these of the role type's metrics.")

    @field_validator("language")
    @classmethod
    def _known_language(cls, v: str) -> str:
        if v not in LANGUAGES:
            raise ValueError(f"unknown language '{v}' (use {' or '.join(LANGUAGES)})")
        return v

    @model_validator(mode="after")
    def _metrics_of_its_type(self) -> Seed:
        if self.metrics is not None:
            unknown = [m for m in self.metrics if m not in METRICS]
            if unknown:
                raise ValueError(f"field 'metrics': unknown metric '{unknown[0]}' (known: {', '.join(METRICS)})")
            outside = [m for m in self.metrics if m not in ALLOCATION[self.role_type]]
            if outside:
                raise ValueError(f"field 'metrics': '{outside[0]}' is not judged for a {self.role_type} "
                                 f"(its metrics: {', '.join(ALLOCATION[self.role_type])})")
        if len(set(self.formats)) != len(self.formats):
            raise ValueError("field 'formats': a format is listed twice")
        return self


class Round(Record):
    """One round: the user query (with the sub-topic and sub-intent behind it) and the tested model's reply."""

    dialogue_id: str
    seed_id: str
    model: str
    prompt_format: str
    round: int
    sub_topic: str | None
    sub_intent: str | None
    query: str
    query_attempts: int  # query drafts made for this round (0 for the seed's own first query)
    response: str | None
    status: Status
    error: str | None = None


class Step(Record):
    """An intermediate step of the dialogue generator (termination check, plan and query, quality check)."""

    dialogue_id: str
    model: str
    round: int  # the round the step prepares
    step: Literal["terminate", "query", "verify"]
    attempt: int
    output: str | None  # the step's structured reply, as JSON
    status: Status
    error: str | None = None


class DialogueEnd(Record):
    dialogue_id: str
    seed_id: str
    model: str
    rounds: int
    reason: str  # max rounds, purpose served, no query passed, a failed call (see FAILED_ENDS)

    @property
    def failed(self) -> bool:
        """Ended by a failed call: the dialogue is a failure, never scored (its rounds are not judged)."""
        return self.reason.startswith(FAILED_ENDS)


# How a dialogue cut short by a failed call ends: the generator's (termination check, query, quality check),
# or the tested model's (no usable reply, an empty one included, after the gateway's attempts).
GENERATOR_FAILED = "the generator failed"
TESTED_MODEL_FAILED = "the tested model failed"
FAILED_ENDS = (GENERATOR_FAILED, TESTED_MODEL_FAILED)


class Label(Record):
    """A binary judgment of one round on one metric."""

    dialogue_id: str
    model: str
    round: int
    metric: str
    label: Literal["good", "bad"] | None
    explanation: str | None
    # "no reply" only in runs made before failed dialogues became failures (their failed rounds were labelled bad).
    source: Literal["judge", "no reply"]
    status: Status
    error: str | None = None


class DialogueScore(Record):
    """One dialogue's DMT-Score on one metric (x100): its prefix scores averaged over tau = 1..T."""

    model: str
    dialogue_id: str
    seed_id: str
    metric_code: str  # one of the 14 (a group column of the report cannot be called "metric")
    role_type: str
    prompt_format: str
    intent: str
    language: str
    rounds: int
    score: float | None
    prefix: list[float | None]  # score at tau = 1..T (0 or 1; None where the policy excludes it)
