"""The tables RoleLLM writes."""

from __future__ import annotations

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.modes.rolellm.records import (
    BenchRow,
    GeneralResponse,
    Ranking,
    RoleAnswer,
    RowScore,
    ScriptChoice,
    Triplet,
)

QUESTIONS = TableSpec("questions", 1, BenchRow)
ANSWERS = TableSpec("answers", 1, RoleAnswer)
ROW_SCORES = TableSpec("row_scores", 1, RowScore)
RANKINGS = TableSpec("rankings", 1, Ranking)
TRIPLETS = TableSpec("triplets", 1, Triplet)
GENERAL_RESPONSES = TableSpec("general_responses", 1, GeneralResponse)
SELECTION = TableSpec("selection", 1, ScriptChoice)
