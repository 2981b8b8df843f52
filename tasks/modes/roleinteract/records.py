"""RoleInteract's records: benchmark items as the released files hold them, a model's answers, and the
item-level scores its table and analyses are made from."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rpbench.tasks.core.records import Record


class Utterance(Record):
    speaker: str
    text: str


class Choice(Record):
    letter: str = Field(pattern=r"^[A-H]$")
    text: str


class Profile(Record):
    name: str
    text: str


class Item(Record):
    """One benchmark question. ``raw`` keeps the whole released record as JSON text, exactly as read (its
    ``meta`` with other models' answers included), so nothing in a released file is lost."""

    item_id: str  # <file stem>:<index in the file>
    source: str  # the file it came from
    index: int
    language: Literal["en", "zh"]
    category: str  # as released: Individual-SA-RoleStyle, Group-SAP-Negative, ...
    column: str  # the results-table column it scores in (catalog.COLUMNS)
    dialogue: list[Utterance]
    instruction: str
    choices: list[Choice]  # empty for memory items
    label: list[str]  # gold letters, or the keywords a memory answer should recall
    target: str | None  # the role the model plays (meta.name)
    profiles: list[Profile]
    raw: str
    group_size: int | None  # group items: how many members
    target_preference: str | None  # group items: the target's designed social preference
    polarity: str | None  # group items: the members' majority preference (when the file labels members)


class Answer(Record):
    """A model's reply to an item. ``letters``: the options read from it (multiple-choice items)."""

    item_id: str
    model: str
    text: str | None
    letters: list[str] | None
    status: Literal["ok", "unparsed", "failed"]  # unparsed: it answered, but no option could be read
    error: str | None = None


class ItemScore(Record):
    """One model on one item: RoleInteract's item-level table. ``score`` is x100 (0-100); None when the item
    is not scored (its call failed, or its answer could not be read under the ``skip`` policy)."""

    model: str
    item_id: str
    column: str
    language: str
    category: str
    status: Literal["scored", "unparsed", "failed"]
    score: float | None
    utterances: int
    group_size: int | None
    target_preference: str | None
    polarity: str | None
