"""Tables whose columns depend on a mode's metric specs: model scores and the leaderboard."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pydantic import create_model

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.core.records import Record
from rpbench.tasks.reports.spec import Column, Scoring


def model_scores_table(scoring: Scoring) -> TableSpec[Any]:
    """model, metric, one column per grouping key, score, ci_low, ci_high, n."""
    record = create_model(
        "ModelScore", __base__=Record, model=(str, ...), metric=(str, ...),
        **{k.column: (str, ...) for k in scoring.groups},  # type: ignore[call-overload]
        score=(float, ...), ci_low=(float, ...), ci_high=(float, ...), n=(int, ...),
    )
    return TableSpec("model_scores", 3, record)


def leaderboard_table(columns: Sequence[Column]) -> TableSpec[Any]:
    """model, the headline with its interval and n, then every report column (numbers, possibly missing)."""
    head, *rest = columns
    fields: dict[str, Any] = {"model": (str, ...), head.key: (float, ...), "ci_low": (float, ...),
                              "ci_high": (float, ...), "n": (int, ...)}
    for c in rest:
        fields.setdefault(c.key, (int, ...) if c.key == "failed" else (float | None, None))
    return TableSpec("leaderboard", 1, create_model("LeaderboardRow", __base__=Record, **fields))


# How a leaderboard's columns are shown (label, unit, digits, scale), kept in its Parquet metadata, so a page
# over run folders (``rpbench report``) shows each number as the run's own report does without its mode.
COLUMNS_SHOWN = b"rpbench.columns"


def columns_metadata(columns: Sequence[Column]) -> dict[bytes, bytes]:
    return {COLUMNS_SHOWN: json.dumps([dataclasses.asdict(c) for c in columns]).encode()}


def columns_shown(table: pa.Table) -> list[Column] | None:
    """The columns as the run's report showed them, or None for a leaderboard written before they were kept."""
    raw = (table.schema.metadata or {}).get(COLUMNS_SHOWN)
    return [Column(**c) for c in json.loads(raw)] if raw else None


# Per model, how many items it was asked (see report.items_asked): the base of the run's failure rule.
ITEMS_ASKED = b"rpbench.items"


def items_metadata(items: dict[str, int]) -> dict[bytes, bytes]:
    return {ITEMS_ASKED: json.dumps(items).encode()} if items else {}


def items_asked_of(table: pa.Table) -> dict[str, int] | None:
    """What ``items_metadata`` kept, or None for a leaderboard written before it was kept."""
    raw = (table.schema.metadata or {}).get(ITEMS_ASKED)
    return {str(k): int(v) for k, v in json.loads(raw).items()} if raw else None
