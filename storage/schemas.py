"""Every Parquet table rpbench writes, with its schema version.

Bump a table's version when its columns change in a way old readers cannot
handle; ``storage.tables.read_table`` refuses files newer than it knows.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True)
class TableSpec:
    name: str
    version: int
    schema: pa.Schema

    @property
    def filename(self) -> str:
        return f"{self.name}.parquet"


def _spec(name: str, version: int, *fields: pa.Field) -> TableSpec:
    return TableSpec(name, version, pa.schema(list(fields)))


TURN = pa.struct([("speaker", pa.string()), ("text", pa.string())])

# One row per LLM request the gateway answered (from the model or from the call cache).
CALLS = _spec(
    "calls",
    1,
    pa.field("call_id", pa.string(), nullable=False),
    pa.field("cache_key", pa.string(), nullable=False),
    pa.field("role", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("tag", pa.string()),
    pa.field("attempt", pa.int32()),
    pa.field("cached", pa.bool_()),
    pa.field("outcome", pa.string()),  # ok | parse_error | failed
    pa.field("error", pa.string()),
    pa.field("prompt_tokens", pa.int64()),
    pa.field("completion_tokens", pa.int64()),
    pa.field("latency_s", pa.float64()),
    pa.field("cost_usd", pa.float64()),
    pa.field("transient_retries", pa.int32()),
    pa.field("started_at", pa.timestamp("ms", tz="UTC")),
)

# The demo's role-play replies and their judged scores (Foundation demo).
DEMO_REPLIES = _spec(
    "demo_replies",
    1,
    pa.field("prompt_id", pa.string(), nullable=False),
    pa.field("character", pa.string()),
    pa.field("prompt", pa.string()),
    pa.field("reply", pa.string()),
    pa.field("judge_status", pa.string()),
    pa.field("in_character", pa.int32()),
    pa.field("judge_reason", pa.string()),
    pa.field("judge_raw", pa.string()),
)
