"""PingPong's records: character cards, situations, conversation turns, per-turn judgments and the
conversation-level scores its leaderboard is made of.

Judgment columns keep PingPong's own field names (``turn``, ``is_refusal``,
``in_character_score``, ...) so stored results line up with its published
leaderboard and scripts.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from rpbench.tasks.core.records import Record, Status

CRITERIA = ("in_character", "entertaining", "fluency")


class Card(Record):
    """A character card: all the player sees. ``summary`` is all the interrogator sees of it."""

    language: str = Field(min_length=1)
    name: str = Field(min_length=1)
    system_prompt: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    example_dialogue: str | None = None
    greeting: str | None = None
    tags: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _stripped(cls, v: str) -> str:
        return v.strip()

    @field_validator("name", "system_prompt", "summary")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("is blank")
        # A name is a key (stripped); the texts go into the release's templates exactly as written, as its
        # scripts pass them (a YAML block's closing line break included).
        return v


class Situation(Record):
    """What the interrogator is told to do, and for how many turns."""

    language: str = Field(min_length=1)
    situation_id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    num_turns: int = Field(default=4, ge=1, le=50)


class Grades(Record):
    """A verdict on one player turn, in PingPong's field names (explanations before scores)."""

    is_refusal_explanation: str
    is_refusal: bool
    in_character_explanation: str
    in_character_score: int
    entertaining_explanation: str
    entertaining_score: int
    fluency_explanation: str
    fluency_score: int


class Turn(Record):
    """One turn of a conversation: the interrogator's message and the player's reply.

    A conversation whose turn failed stops there; the failed turn keeps its error and no text.
    """

    conversation_id: str
    model: str
    language: str
    character: str
    situation_id: str
    turn: int
    user: str | None
    player: str | None
    status: Status
    error: str | None = None
    # v1 (one combined interrogator-judge): its grades of this turn's reply, on 1-10, given with its next message.
    tester: Grades | None = None


class TurnJudgment(Grades):
    """One judge's verdict on one player turn of one conversation."""

    conversation_id: str
    model: str
    judge: str
    turn: int


class ConversationScore(Record):
    """A conversation's scores for one player model, judges pooled: the leaderboard's item-level table.

    ``final`` and the criteria are None when every judge flagged a refusal (the conversation counts in
    the refusal ratio and not in the averages); ``ln_score`` is ``final`` times the model's length factor.
    """

    model: str
    conversation_id: str
    language: str
    character: str
    situation_id: str
    judges: list[str]
    refusal: bool
    refused_by: list[str] = Field(default_factory=list)
    in_character: float | None
    entertaining: float | None
    fluency: float | None
    final: float | None
    ln_score: float | None
    length: float  # mean characters per player message in this conversation
    messages: int
