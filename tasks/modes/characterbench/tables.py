"""The tables CharacterBench's mode writes."""

from __future__ import annotations

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.modes.characterbench.records import Item, ItemScore, Judgment, Reply

ITEMS = TableSpec("items", 1, Item)
REPLIES = TableSpec("replies", 1, Reply)
JUDGMENTS = TableSpec("judgments", 1, Judgment)
ITEM_SCORES = TableSpec("item_scores", 1, ItemScore)
