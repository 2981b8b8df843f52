"""Metrics every simple benchmark repeats, ready for a ``Scoring``: the share of items right as a percentage,
and a plain mean, each with its bootstrap interval (grouped by any ``GroupKey`` the scoring gives)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rpbench.tasks.reports.spec import MetricSpec


def percent(values: Sequence[float]) -> float:
    return 100 * sum(values) / len(values)


def percent_statistic(sample: np.ndarray, axis: int = -1) -> np.ndarray:
    return 100 * np.asarray(sample).mean(axis=axis)


def accuracy(description: str = "share of items answered right", column: str = "correct",
             name: str = "accuracy") -> MetricSpec:
    """Items scored 1 (right) or 0 (wrong) in ``column``, shown as a percentage with its interval."""
    return MetricSpec(name, f"{description}, in percent", column, point=percent, statistic=percent_statistic,
                      unit="%")


def mean_of(name: str, description: str, column: str, higher_is_better: bool = True, digits: int = 2,
            interval: bool = True, unit: str = "") -> MetricSpec:
    """The mean of ``column`` over items (a score, a length, a time), with its interval unless told not."""
    return MetricSpec(name, description, column, higher_is_better=higher_is_better, interval=interval,
                      digits=digits, unit=unit)
