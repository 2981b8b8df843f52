"""The rows of training: instruction samples, preference pairs and the loss curve."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rpbench.tasks.core.records import Record

SampleKind = Literal["general", "role_specific", "dialogue"]
Split = Literal["train", "heldout"]


class ChatTurn(Record):
    role: Literal["system", "user", "assistant"]
    content: str


class SftSample(Record):
    """One supervised sample: the prompt a model is given (as chat messages) and the reply it should learn.

    ``system`` and ``input`` repeat what the prompt holds for a reader (the role's instruction, the question or
    the dialogue so far); training reads ``prompt`` and ``response``.
    """

    sample_id: str = Field(min_length=1)  # where it came from: file and line, or dialogue and turn
    source: str  # the data path it was read from
    kind: SampleKind
    language: str
    role: str
    prompt: list[ChatTurn] = Field(min_length=1)
    response: str = Field(min_length=1)
    system: str
    input: str
    split: Split = "train"


class PreferencePair(Record):
    """Two replies at one test turn of a built benchmark, ordered by the judge's verdict (sigma, 1-5:
    1 = strongly the source reply, 5 = strongly the base reply); ties (3) make no pair."""

    pair_id: str = Field(min_length=1)
    source: str
    language: str
    role: str
    prompt: list[ChatTurn] = Field(min_length=1)
    chosen: str = Field(min_length=1)
    rejected: str = Field(min_length=1)
    chosen_side: Literal["source", "base"]
    sigma: int
    margin: int  # |sigma - 3|: 1 a slight preference, 2 a strong one
    split: Split = "train"


class LossPoint(Record):
    """The loss logged at one step, on the training data or the held-out split."""

    step: int
    epoch: float
    split: Split
    loss: float
