"""The tables PingPong writes."""

from __future__ import annotations

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.modes.pingpong.records import Card, ConversationScore, Turn, TurnJudgment

CARDS = TableSpec("cards", 1, Card)
CONVERSATIONS = TableSpec("conversations", 1, Turn)
TURN_JUDGMENTS = TableSpec("judgments", 1, TurnJudgment)
CONVERSATION_SCORES = TableSpec("conversation_scores", 1, ConversationScore)
