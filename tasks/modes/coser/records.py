"""CoSER's records: a given circumstance as the released test set holds it, the messages of a simulated scene,
a critic's flaws per dimension, and the item-level scores."""

from __future__ import annotations

from typing import Literal

from rpbench.tasks.core.records import Record

ENVIRONMENT = "Environment"  # the agent that describes the world's reactions (not a character)
NEXT_SPEAKER = "NSP"  # the role under which CoSER's release stores a next-speaker prediction
END_CHAT = "<END CHAT>"
# Why a next speaker was drawn at random: the predictor said "random", named someone off the list, named the
# speaker who just spoke, ended the scene before round 6, or gave no reply.
DRAWN = ("random", "off-list", "same-speaker", "early-end", "failed")
DIMENSIONS = ("Storyline Consistency", "Anthropomorphism", "Character Fidelity", "Storyline Quality")


class Line(Record):
    speaker: str
    text: str


class Motivation(Record):
    """A key character's inner thought in the circumstance (``thought``, or ``motivation`` in CoSER's example
    set): what its actor is told it privately thinks."""

    name: str
    text: str


class Circumstance(Record):
    """One test circumstance. ``profiles`` are those of the characters who speak in it, as CoSER builds them
    (the plot's description of a key character before the book-wide profile); ``raw`` keeps the record."""

    circumstance_id: str  # <book>-<i_p>-<i_c>, CoSER's own case key
    book: str
    i_p: int
    i_c: int
    tag: str  # id (books seen in training) or ood
    language: str  # en or zh: zh when more than 5% of its scenario and dialogue are Chinese characters (as CoSER tells)
    scenario: str
    plot_summary: str
    speaking: list[str]  # the speaking characters, Environment last if the record leaves it out
    major: list[str]
    profiles: list[Line]  # speaker = character, text = profile
    motivations: list[Motivation]
    original: list[Line]
    raw: str


class Message(Record):
    """One message of a simulated scene: a character's or the environment's turn, or a next-speaker choice."""

    circumstance_id: str
    model: str
    index: int
    role: str  # a character, Environment, or NSP
    content: str  # a turn as written (thoughts kept; a released simulation's under its speaker's name); for NSP: the
    # name the predictor gave
    # For NSP: who speaks next after the rules (None: the scene ends), and how that was decided: the
    # predictor's own valid choice, the original dialogue's (--continue-from), or a seeded random pick among
    # the main characters and the Environment when the predictor said "random", named someone off the list,
    # the speaker who just spoke, ended before round 6, or gave no reply at all.
    chosen: str | None = None
    decided_by: Literal["model", "original", "given", "random", "off-list", "same-speaker", "early-end",
                        "failed"] = "model"

    @property
    def said(self) -> str:
        """The turn without its speaker's name in front (where it has one: the released simulations store
        "Name: ...", and a model may start its reply so)."""
        for mark in (f"{self.role}:", f"{self.role}："):
            if self.content.startswith(mark):
                return self.content[len(mark):].lstrip()
        return self.content

    @property
    def drawn(self) -> bool:
        """A next speaker drawn at random because the predictor's answer could not be followed."""
        return self.role == NEXT_SPEAKER and self.decided_by in DRAWN


class SceneEnd(Record):
    """How a circumstance's simulation ended for one model; a failed one is not scored."""

    circumstance_id: str
    model: str
    rounds: int
    status: Literal["ok", "failed"]
    error: str | None = None
    # Replies that came back empty six times (asked again at temperature 1 five times, as the release asks) and
    # were kept empty, as the release keeps them.
    kept_empty: int = 0


class Flaw(Record):
    instance: str
    type: str
    severity: int  # a whole number, as CoSER's sum counts (the critic's schema holds it to one)


class Critique(Record):
    """One critic call: the flaws of one dimension of one model's scene, and the dimension's score."""

    circumstance_id: str
    model: str
    dimension: str
    flaws: list[Flaw]
    actor_rounds: int
    score: float | None
    status: Literal["ok", "failed"]
    text: str | None = None
    error: str | None = None


class CircumstanceScore(Record):
    """The item table: one circumstance acted by one model, scored on all four dimensions (a circumstance whose
    scene or any critique failed is a failure instead), with its overlap with the book's conversation."""

    item_id: str  # circumstance id
    model: str
    tag: str  # id or ood
    storyline_consistency: float
    anthropomorphism: float
    character_fidelity: float
    storyline_quality: float
    score: float  # the mean of the four
    bleu: float
    rouge_l: float


# The item table's column of each dimension.
COLUMNS = dict(zip(DIMENSIONS, ("storyline_consistency", "anthropomorphism", "character_fidelity",
                                "storyline_quality"), strict=True))
