"""The tables RPBench-Auto's mode writes (the battles it gives the arena are the kit's ``BATTLES``)."""

from __future__ import annotations

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.modes.rpbench_auto.records import DialogueEnd, Round

ROUNDS = TableSpec("rounds", 1, Round)
DIALOGUE_ENDS = TableSpec("dialogue_ends", 1, DialogueEnd)
