"""Training data, whatever mode made it: the mix of sample kinds, the held-out share, the main language.

The samples themselves come from the modes' training sources (``tasks.training.sources``).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TypeVar

from rpbench.tasks.core.errors import InputError, unknown_name
from rpbench.tasks.training.records import ChatTurn, PreferencePair, SampleKind, SftSample

KINDS: tuple[SampleKind, ...] = ("general", "role_specific", "dialogue")
T = TypeVar("T", SftSample, PreferencePair)


def chat_turns(prompt: Sequence[Mapping[str, str]]) -> list[ChatTurn]:
    """A prompt's chat messages as the turns a sample stores."""
    return [ChatTurn(role=m["role"], content=m["content"]) for m in prompt]  # type: ignore[arg-type]


# -- mixing and holding out ---------------------------------------------------------------------------------
def parse_mix(specs: Sequence[str]) -> dict[str, float]:
    """``kind=weight`` options (general=1, role_specific=2, dialogue=0.5) as weights by kind."""
    out: dict[str, float] = {}
    for spec in specs:
        kind, sep, value = spec.partition("=")
        if not sep:
            raise InputError(f"--mix: '{spec}' is not kind=weight with kind one of {', '.join(KINDS)}")
        if kind not in KINDS:
            raise InputError(f"--mix: '{spec}': {unknown_name('kind', kind, KINDS)}")
        try:
            weight = float(value)
        except ValueError:
            raise InputError(f"--mix: '{spec}': the weight is not a number") from None
        if weight < 0:
            raise InputError(f"--mix: '{spec}': a weight cannot be negative")
        out[kind] = weight
    return out


def mix(samples: Sequence[SftSample], weights: Mapping[str, float], seed: int) -> list[SftSample]:
    """Downsample kinds to the ratio of ``weights`` (the largest set that keeps it, no sample twice); kinds
    without a weight are kept whole, weight 0 drops a kind. Which samples stay is seeded."""
    by_kind: dict[str, list[SftSample]] = defaultdict(list)
    for s in samples:
        by_kind[s.kind].append(s)
    weighted = {k: w for k, w in weights.items() if w > 0 and by_kind.get(k)}
    absent = sorted(k for k, w in weights.items() if w > 0 and not by_kind.get(k))
    if absent:
        raise InputError(f"--mix: no {absent[0]} samples in the data to mix")
    unit = min((len(by_kind[k]) / w for k, w in weighted.items()), default=0.0)
    rng = random.Random(seed)
    out: list[SftSample] = []
    for kind in sorted(by_kind):
        group = sorted(by_kind[kind], key=lambda s: s.sample_id)
        if kind in weights:
            keep = round(unit * weights[kind]) if kind in weighted else 0
            group = sorted(rng.sample(group, min(keep, len(group))), key=lambda s: s.sample_id)
        out += group
    if samples and not out:
        raise InputError(f"--mix: keeps no sample (the data holds only {', '.join(sorted(by_kind))}, weighted 0)")
    return out


def hold_out(rows: Sequence[T], share: float, seed: int) -> list[T]:
    """The same rows with a seeded ``share`` of them (at least one when there are two or more) marked
    held out: their loss is measured, never trained on."""
    if share <= 0 or len(rows) < 2:
        return list(rows)
    ids = sorted(r.pair_id if isinstance(r, PreferencePair) else r.sample_id for r in rows)
    n = min(len(ids) - 1, max(1, round(share * len(ids))))
    held = set(random.Random(seed).sample(ids, n))
    return [r.model_copy(update={"split": "heldout"})
            if (r.pair_id if isinstance(r, PreferencePair) else r.sample_id) in held else r for r in rows]


def main_language(rows: Sequence[SftSample] | Sequence[PreferencePair]) -> str:
    """The language most rows are in (the Alpaca template's headings follow it)."""
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        counts[r.language] += 1
    return max(sorted(counts), key=lambda k: counts[k]) if counts else "en"
