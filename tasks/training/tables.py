"""The tables training writes."""

from __future__ import annotations

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.training.records import LossPoint, PreferencePair, SftSample

SAMPLES = TableSpec("samples", 1, SftSample)
PAIRS = TableSpec("pairs", 1, PreferencePair)
LOSSES = TableSpec("losses", 1, LossPoint)
