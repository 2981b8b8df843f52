"""FURINA's settings and their defaults, each written once.

The stages take these; the flows' settings models (and so the command line and
the deployments) take their defaults from here. Kept free of heavy imports, so
the command line can read them without loading the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rpbench.tasks.modes.furina.evaluation.scoring import DEFAULT_F


@dataclass(frozen=True)
class ChunkingConfig:
    """CoSER's chunk sizes: chapters merge up to min_tokens, chunks over max_tokens split to about target."""

    target_tokens: int = 8192
    min_tokens: int = 4096
    max_tokens: int = 16384
    min_headings: int = 3  # fewer headings than this: windows instead of chapters


@dataclass(frozen=True)
class FilterConfig:
    min_utterances: int = 4
    min_speakers: int = 2


@dataclass(frozen=True)
class PoolConfig:
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    filters: FilterConfig = field(default_factory=FilterConfig)
    plot_aware: bool = True


@dataclass(frozen=True)
class BuildConfig:
    tau: int = 10
    min_rounds: int = 6
    max_rounds: int = 20
    max_test_gap: int = 3  # the test character speaks at least once every this many turns
    max_dialogues_per_character: int = 40
    keep_sigma_at_most: int = 3  # sigma <= this: the source reply enters the history
    item_sigma_below: int = 3  # sigma < this: the turn becomes a benchmark item
    keep_grades: tuple[str, ...] = ("high",)
    test_sees_scene_extras: bool = False
    # Who names an item's dimension: "judge" (the paper: the selection judge picks the one the turn tests
    # best) or "target" (the exchange's DWRS target, which the judge is told and only scores on). "target"
    # is for weak judges, which left to choose name one dimension for nearly every turn.
    dimension_by: str = "judge"
    same_language: bool = True
    # Dialogues of one character that start together from the same item counts (one wave). Part of what the
    # benchmark is, like the seed; how many calls run at once is the endpoint's bound and changes nothing.
    wave_size: int = 8
    seed: int = 0
    sources: tuple[str, ...] = ("source",)


@dataclass
class EvalConfig:
    f: dict[int, float] = field(default_factory=lambda: dict(DEFAULT_F))
    resamples: int = 1000
    seed: int = 0
    test_sees_scene_extras: bool = False


@dataclass
class SynthesisConfig:
    n_characters: int = 3
    language: str = "en"
    seed_roles: tuple[str, ...] = ("synthesizer",)
    max_refine: int = 2
    max_originality_retries: int = 2
