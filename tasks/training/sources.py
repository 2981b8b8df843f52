"""Where training data comes from: each benchmark mode that can make samples offers a ``TrainingSource``.

`rpbench train --data PATH...` asks every registered mode's source whether it reads each path (RoleLLM reads
RoleBench files, FURINA built benchmarks), so the training code never names a mode. A path no source reads,
or one that two sources claim, is an input error naming the path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rpbench.tasks.training.records import PreferencePair, SftSample


@dataclass(frozen=True)
class TrainingRequest:
    """What the command asks of the data: RoleBench parts to read, role profiles given, the objective."""

    parts: tuple[str, ...] = ("train",)
    profiles: tuple[str, ...] = ()
    objective: str = "sft"


@dataclass(frozen=True)
class TrainingSource:
    # What it reads, as a user would call it ("RoleBench files", "benchmark folders (rpbench furina build)").
    what: str
    # Whether a path (that exists) is data of this source.
    claims: Callable[[Path, TrainingRequest], bool]
    # Every input error now, before any flow starts; returns the files whose content decides the data.
    check: Callable[[Sequence[str], TrainingRequest], list[str]]
    # Supervised samples from the claimed paths.
    samples: Callable[[Sequence[str], TrainingRequest], list[SftSample]]
    # Preference pairs and the number of ties dropped; None when this source has none.
    pairs: Callable[[Sequence[str]], tuple[list[PreferencePair], int]] | None = None
    # Prompt templates its samples are rendered with ("group/name" or "group/"): they are in the stage's key.
    templates: tuple[str, ...] = ()
    # "module:function" evaluating models side by side on one of its paths after training (`--eval-bench`):
    # (path, models, out, models_file, cache) -> the evaluation's summary. None: it offers none.
    evaluate: Any = None
