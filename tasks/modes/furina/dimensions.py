"""FURINA's five evaluation dimensions (section 4), named once for the whole mode."""

from __future__ import annotations

from typing import Literal, get_args

# Context Reliance, Factual Recall, Reflective Reasoning, Conversational Ability, Preference Alignment.
Dimension = Literal["CR", "FR", "RR", "CA", "PA"]
DIMENSIONS: tuple[str, ...] = get_args(Dimension)
