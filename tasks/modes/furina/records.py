"""Records only the FURINA mode writes: the pool's books and chunks, the builder's dialogues and statistics,
the hallucination checks. The records every mode shares are in ``rpbench.tasks.core.records``."""

from __future__ import annotations

from pydantic import Field, create_model

from rpbench.tasks.core.records import Record, Status
from rpbench.tasks.modes.furina.dimensions import DIMENSIONS
from rpbench.tasks.modes.furina.domain import Line
from rpbench.tasks.modes.furina.pool.models import ExtractedCharacter, ExtractedScene


class BookRecord(Record):
    book_id: str
    title: str
    language: str
    source: str
    encoding: str
    n_chars: int
    n_headings: int
    n_chunks: int


class Chunk(Record):
    book_id: str
    chunk_index: int
    text: str
    n_tokens: int
    start_char: int
    end_char: int
    # What the plot-aware pass did at this chunk's end: moved | kept | not_found | too_far | failed | last | static
    boundary: str


class Extraction(Record):
    """What the extractor found in one chunk: scenes, or the error that left the chunk without any."""

    book_id: str
    chunk_index: int
    status: Status
    error: str | None
    scenes: list[ExtractedScene]


class RawScene(Record):
    """A scene as extracted from the chunks, possibly joined across a chunk edge, before assembly."""

    book_id: str
    summary: str
    characters: list[ExtractedCharacter]
    dialogue: list[Line]
    chunk_indices: list[int]
    truncated: bool
    stitched: bool = False
    notes: list[str] = Field(default_factory=list)


class DroppedScene(Record):
    book_id: str
    chunk_indices: list[int]
    summary: str
    n_utterances: int
    reason: str


class PoolStats(Record):
    language: str
    books: int
    chunks: int
    scenes: int
    characters: int
    utterances: int
    dropped_scenes: int | None


class DialogueTurn(Record):
    """One turn of a simulated dialogue; test turns carry both candidates, the verdict and the dimension."""

    dialogue_id: str
    character: str
    scene_id: str
    turn: int
    speaker: str
    text: str
    is_test: bool
    target_dimension: str | None
    source_reply: str | None
    base_reply: str | None
    source_role: str | None
    sigma: int | None
    dimension: str | None
    rationale: str | None
    judge_status: str | None
    director: str
    exchange: int  # the dialogue's exchange this turn belongs to: one DWRS selection, one target dimension
    grade: str | None


class Grade(Record):
    """The judge's grade of one finished dialogue; only dialogues whose grade is kept give items."""

    dialogue_id: str
    character: str
    grade: str  # poor | moderate | high | ungraded (the grading call failed)
    reason: str | None
    status: Status


class ItemScore(Record):
    """One item's score for one model, from both judgment orders.

    An item whose answer failed or came back empty stays in the table with
    ``answered`` false and score 0: the headline is over every item, as the
    paper's Performance is over 3N points; ``score_answered`` leaves such
    items out. The length and markup of both replies feed the style-controlled
    score. ``dialogue_id`` groups items for dialogue-clustered intervals.
    """

    item_id: str
    model: str
    dimension: str
    language: str
    character: str
    character_type: str
    dialogue_id: str
    answered: bool
    sigma1: int | None
    sigma2: int | None
    score: float
    score_answered: float | None
    hallucinated: bool | None
    test_chars: int | None
    base_chars: int
    test_markup: int | None
    base_markup: int


class Check(Record):
    """The hallucination checker's answer on one judgment's rationale."""

    item_id: str
    model: str
    order: int
    answer: str | None
    status: Status
    error: str | None = None


class SourceModelCount(Record):
    """Appendix J: how many accepted replies (items) each source model wrote, per language."""

    language: str
    source_model: str
    items: int
    share: float


# Appendix I's statistics, per language: one items_<dimension> column per dimension.
BuildStats = create_model(
    "BuildStats",
    __base__=Record,
    language=(str, ...),
    test_characters=(int, ...),
    unique_characters=(int, ...),
    conversations=(int, ...),
    conversations_kept=(int, ...),
    mean_conversation_length=(float | None, ...),
    items=(int, ...),
    items_per_conversation=(float | None, ...),
    **{f"items_{d}": (int, ...) for d in DIMENSIONS},  # type: ignore[call-overload]
)
