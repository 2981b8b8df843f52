"""The tables CoSER's mode writes."""

from __future__ import annotations

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.modes.coser.records import Circumstance, CircumstanceScore, Critique, Message, SceneEnd

CIRCUMSTANCES = TableSpec("circumstances", 1, Circumstance)
MESSAGES = TableSpec("messages", 1, Message)
SCENE_ENDS = TableSpec("scene_ends", 1, SceneEnd)
CRITIQUES = TableSpec("critiques", 1, Critique)
CIRCUMSTANCE_SCORES = TableSpec("circumstance_scores", 1, CircumstanceScore)
