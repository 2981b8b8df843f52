"""The tables DMT-RoleBench writes."""

from __future__ import annotations

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.modes.dmt.records import DialogueEnd, DialogueScore, Label, Round, Seed, Step

SEEDS = TableSpec("seeds", 1, Seed)
ROUNDS = TableSpec("rounds", 1, Round)
STEPS = TableSpec("steps", 1, Step)
ENDS = TableSpec("dialogue_ends", 1, DialogueEnd)
LABELS = TableSpec("labels", 1, Label)
DIALOGUE_SCORES = TableSpec("dialogue_scores", 1, DialogueScore)
