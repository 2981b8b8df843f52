"""What a benchmark mode declares about its numbers, so shared code can aggregate, rank and report any mode.

A mode's item-level table has one row per (model, item) with a column per
metric and a column per grouping key. ``Scoring`` says which columns those
are, how each metric aggregates (point estimate and bootstrap statistic), in
which direction it is better, and which groups get a column of their own in
the leaderboard.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rpbench.tasks.stats import mean_statistic
from rpbench.tasks.stats.intervals import Statistic


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    description: str
    column: str  # the item-level column holding each item's value
    higher_is_better: bool = True
    point: Callable[[Sequence[float]], float] = mean  # the aggregate over items
    statistic: Statistic = mean_statistic  # the same aggregate, vectorised for the bootstrap
    interval: bool = True  # report a bootstrap interval
    digits: int = 1
    unit: str = ""  # what the numbers are in (%, "0-100", "1-5"), shown in the column's heading
    # Over rows of several values of this column (the dimensions of a benchmark, say), the point is the
    # unweighted mean of each value's mean, and the interval resamples within each value: every value counts
    # once, however many items it has. ``point`` and ``statistic`` then apply to a single value's items.
    macro_over: str | None = None


@dataclass(frozen=True)
class GroupKey:
    column: str
    label: str
    order: tuple[str, ...] | None = None  # values in this order (absent ones skipped); None: sorted
    breakdown: bool = True  # the leaderboard gets a column per value of this key
    # Headings for values too terse to read alone (CoSER's split is "id" or "ood"); the tables keep the values.
    headings: tuple[tuple[str, str], ...] = ()

    def heading(self, value: str) -> str:
        return dict(self.headings).get(value, value)


@dataclass(frozen=True)
class Scoring:
    """A mode's metrics (the first is the headline the leaderboard ranks by) and grouping keys."""

    metrics: tuple[MetricSpec, ...]
    groups: tuple[GroupKey, ...] = ()
    model_column: str = "model"
    # Rows sharing a value here (items of one dialogue, say) are correlated: intervals resample these
    # clusters whole. None: every row is resampled on its own.
    cluster_column: str | None = None
    # The column naming an item the same way for every model (the same question put to each): a suite
    # resamples these when it asks how far benchmarks' rankings agree. None: the mode's items cannot be
    # matched across models, and a suite says so instead of an interval.
    item_column: str | None = None

    def __post_init__(self) -> None:
        if not self.metrics:
            raise ValueError("a mode needs at least one metric")
        taken = {"model", "metric", "score", "ci_low", "ci_high", "n"}  # columns of the model-scores table
        clash = [k.column for k in self.groups if k.column in taken]
        if clash:
            raise ValueError(f"a group column cannot be called '{clash[0]}' (the model-scores table has one)")

    @property
    def headline(self) -> MetricSpec:
        return self.metrics[0]


@dataclass(frozen=True)
class Column:
    """One column of the leaderboard as a report shows it."""

    key: str
    label: str
    digits: int = 1
    missing: str = "-"  # shown when a model has no value here
    unit: str = ""  # what the shown numbers are in, named in the heading: one unit per column
    scale: float = 1.0  # shown = stored x scale (a share stored as 0-1 is shown in %)

    @property
    def heading(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label

    def shown(self, value: Any) -> Any:
        """The value as this column shows it (scaled; what is not a number as it is)."""
        return value * self.scale if isinstance(value, int | float) and self.scale != 1.0 else value


@dataclass(frozen=True)
class Chart:
    """A figure (base64 PNG), its alt text, and in words what it cannot draw (values not defined, say)."""

    png: str
    alt: str
    caption: str = ""


@dataclass(frozen=True)
class Section:
    """A part of a report a mode adds: Markdown, and figures as base64 PNGs shown after the text."""

    title: str
    markdown: str
    images: dict[str, str] = field(default_factory=dict)


@dataclass
class Analysis:
    """What a mode adds to a report: sections, and figures for the manifest (Pareto sets, indices, ...)."""

    sections: list[Section] = field(default_factory=list)
    summary: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class AnalysisInput:
    """What a mode's ``analyze`` works from: the ranked leaderboard (its extra columns to fill in place),
    the item-level records, every model score with its interval, the bootstrap settings, and facts of the
    run the mode asked its flow to pass (``context``: which judge, say)."""

    board: list[dict[str, Any]]
    records: list[Any]
    scores: list[dict[str, Any]]
    resamples: int
    seed: int
    context: dict[str, Any] = field(default_factory=dict)
    colours: dict[str, str] = field(default_factory=dict)  # model -> its colour in every chart of the report


@dataclass(frozen=True)
class ReportSpec:
    """How a mode's item-level rows become model scores, a leaderboard and a report."""

    title: str
    scoring: Scoring
    extra_columns: tuple[Column, ...] = ()  # the mode's own leaderboard columns, filled by ``analyze``
    # Fills the extra columns of the leaderboard rows (in place) and returns the mode's report sections.
    analyze: Callable[[AnalysisInput], Analysis] | None = None
    unit: str = "benchmark items"  # what the report's item count counts


@dataclass
class Scored:
    """What a mode's scoring hook gives the kit's report stage: the item-level rows (its item table), the
    failures, how many items the run covered, the other tables to keep final (spec, records), the facts its
    ``analyze`` reads (``context``), and the samples for the viewer (they may be made as they are read)."""

    rows: Sequence[Any]
    failures: Sequence[Any]
    n_items: int
    finals: Sequence[tuple[Any, Sequence[Any]]] = ()
    context: dict[str, Any] = field(default_factory=dict)
    samples: Any = ()
    joined: Sequence[tuple[Any, Sequence[str]]] = ()  # tables kept final as their shards' files joined (spec, paths)
    summary: dict[str, Any] = field(default_factory=dict)  # more for the stage's summary (the command prints it)
    # The judges against people, where the run had human scores: the kit keeps them final (agreement.parquet),
    # in the report and the summary. With none, ``agreement_note`` says why (empty: the report is silent).
    agreement: Sequence[Any] = ()
    agreement_note: str = ""
