"""One colour per model, the same in every chart of every report.

A model's colour comes from its name, not from its place in a run's list, so ``gpt-4o`` keeps its colour in
a FURINA report, a PingPong report and the index over both. Names hash to one of the ten strong shades of
matplotlib's tab20; when two models of one report hash to the same shade, the later name in sorted order
takes the next free one (the light shades after the strong), so one report never shows two models alike.
Every chart of a report takes its colours from one map made over all the report's models; the same set of
models gets the same colours in every report.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

# tab20's strong shades, then its light ones: the first ten models of a chart get clearly distinct colours.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)


def _slot(model: str) -> int:
    # A stable hash (Python's own hash() changes between processes).
    return int.from_bytes(hashlib.sha256(model.encode("utf-8")).digest()[:4], "big") % 10


def model_colours(models: Iterable[str]) -> dict[str, str]:
    """Each model's colour: its own slot when free, else the next free one (in sorted order of names)."""
    taken: set[int] = set()
    out: dict[str, str] = {}
    for model in sorted(set(models)):
        slot = _slot(model)
        while slot in taken and len(taken) < len(PALETTE):
            slot = (slot + 1) % len(PALETTE)
        taken.add(slot)
        out[model] = PALETTE[slot]
    return out
