"""The tables RoleInteract writes."""

from __future__ import annotations

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.modes.roleinteract.records import Answer, Item, ItemScore

ITEMS = TableSpec("items", 1, Item)
ANSWERS = TableSpec("answers", 1, Answer)
ITEM_SCORES = TableSpec("item_scores", 1, ItemScore)
