"""CharacterBench's records: an item as the judge and the model under test see it, a reply, a judgment and
the item-level score the report is made from."""

from __future__ import annotations

from typing import Literal

from rpbench.tasks.core.records import Record


class Turn(Record):
    speaker: Literal["user", "character"]
    text: str


class Item(Record):
    """One released item in one language (the English one from its ``translation_en``)."""

    item_id: str  # <dimension>:<id>
    dimension: str
    language: str  # zh, or en (from translation_en)
    character: str
    profile: str  # as the release's scripts pass it on (str() of the file's value)
    user: str
    user_profile: str | None  # as the file holds it; None where it has none
    greeting: str | None
    dialogue: list[Turn]  # ends with the user's turn the character answers
    reference: str | None  # the dimension's reference for the judge
    reply: str | None  # the released system's reply (None when the item has none in this language)
    reply_model: str | None  # the released system's name
    human: float | None  # the human score (annotation_score)
    released_judge: float | None  # CharacterJudge's released prediction (pred_zh / pred_en)


class Reply(Record):
    """A system's reply to an item: from a model under test, or the released one."""

    item_id: str
    language: str
    model: str
    text: str | None
    status: Literal["ok", "failed"]
    error: str | None = None


class Judgment(Reply):
    """The judge's score of ``model``'s reply; ``text`` is its reasoning (or its unreadable reply)."""

    judge: str  # the judge's model
    score: float | None


class ItemScore(Record):
    """One (model, item): the judge's score, scaled as all_eval.py scales it (score / divisor x 5)."""

    model: str
    item_id: str
    dimension: str
    language: str
    score: float | None
    scaled: float | None
    human: float | None
    released_judge: float | None
