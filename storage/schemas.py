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

# -- the character-scene pool --------------------------------------------------------------------
BOOKS = _spec(
    "books",
    1,
    pa.field("book_id", pa.string(), nullable=False),
    pa.field("title", pa.string()),
    pa.field("language", pa.string()),
    pa.field("source", pa.string()),
    pa.field("encoding", pa.string()),
    pa.field("n_chars", pa.int64()),
    pa.field("n_headings", pa.int32()),
    pa.field("n_chunks", pa.int32()),
)

CHUNKS = _spec(
    "chunks",
    1,
    pa.field("book_id", pa.string(), nullable=False),
    pa.field("chunk_index", pa.int32(), nullable=False),
    pa.field("text", pa.string()),
    pa.field("n_tokens", pa.int64()),
    pa.field("start_char", pa.int64()),
    pa.field("end_char", pa.int64()),
    # What the plot-aware pass did at this chunk's end: moved | kept | not_found | too_far | failed | last | static
    pa.field("boundary", pa.string()),
)

ATTRIBUTE = pa.struct([("key", pa.string()), ("value", pa.string()), ("visibility", pa.string())])
SCENE_CHARACTER = pa.struct(
    [("name", pa.string()), ("motivation", pa.string()), ("profile", pa.list_(ATTRIBUTE))]
)

# Scenes keep their characters and dialogue as nested lists: one row is one self-contained scene,
# which is how every consumer (builder, export, `pool add`) reads them.
SCENES = _spec(
    "scenes",
    1,
    pa.field("scene_id", pa.string(), nullable=False),
    pa.field("book_id", pa.string(), nullable=False),
    pa.field("language", pa.string(), nullable=False),
    pa.field("summary", pa.string()),
    pa.field("background", pa.string()),
    pa.field("situation", pa.string()),
    pa.field("original_dialogue", pa.list_(TURN)),
    pa.field("characters", pa.list_(SCENE_CHARACTER)),
    pa.field("chunk_indices", pa.list_(pa.int32())),
    pa.field("source", pa.string()),
)

DROPPED_SCENES = _spec(
    "dropped_scenes",
    1,
    pa.field("book_id", pa.string(), nullable=False),
    pa.field("chunk_indices", pa.list_(pa.int32())),
    pa.field("summary", pa.string()),
    pa.field("n_utterances", pa.int32()),
    pa.field("reason", pa.string()),
)

POOL_STATS = _spec(
    "pool_stats",
    1,
    pa.field("language", pa.string(), nullable=False),
    pa.field("books", pa.int32()),
    pa.field("chunks", pa.int32()),
    pa.field("scenes", pa.int32()),
    pa.field("characters", pa.int32()),
    pa.field("utterances", pa.int32()),
    pa.field("dropped_scenes", pa.int32()),
)

# -- the benchmark (builder) ---------------------------------------------------------------------
DIALOGUES = _spec(
    "dialogues",
    1,
    pa.field("dialogue_id", pa.string(), nullable=False),
    pa.field("character", pa.string()),
    pa.field("scene_id", pa.string()),
    pa.field("turn", pa.int32()),
    pa.field("speaker", pa.string()),
    pa.field("text", pa.string()),
    pa.field("is_test", pa.bool_()),
    pa.field("target_dimension", pa.string()),
    pa.field("source_reply", pa.string()),
    pa.field("base_reply", pa.string()),
    pa.field("source_model", pa.string()),
    pa.field("sigma", pa.int32()),
    pa.field("dimension", pa.string()),
    pa.field("rationale", pa.string()),
    pa.field("judge_status", pa.string()),
    pa.field("director", pa.string()),
    pa.field("grade", pa.string()),
)

ITEMS = _spec(
    "items",
    1,
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("character", pa.string(), nullable=False),
    pa.field("character_type", pa.string()),
    pa.field("language", pa.string()),
    pa.field("scene_id", pa.string()),
    pa.field("dialogue_id", pa.string()),
    pa.field("dimension", pa.string(), nullable=False),
    pa.field("history", pa.list_(TURN)),
    pa.field("test_utterance", pa.string()),
    pa.field("base_utterance", pa.string()),
    pa.field("source_model", pa.string()),
    pa.field("sigma", pa.int32()),
    pa.field("flags", pa.list_(pa.string())),
)

BUILD_STATS = _spec(
    "stats",
    1,
    pa.field("language", pa.string(), nullable=False),
    pa.field("test_characters", pa.int32()),
    pa.field("unique_characters", pa.int32()),
    pa.field("conversations", pa.int32()),
    pa.field("conversations_kept", pa.int32()),
    pa.field("mean_conversation_length", pa.float64()),
    pa.field("items", pa.int32()),
    pa.field("items_per_conversation", pa.float64()),
    *[pa.field(f"items_{d}", pa.int32()) for d in ("CR", "FR", "RR", "CA", "PA")],
)

# -- evaluation ----------------------------------------------------------------------------------
GENERATIONS = _spec(
    "generations",
    1,
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("text", pa.string()),
    pa.field("status", pa.string()),
    pa.field("error", pa.string()),
)

JUDGMENTS = _spec(
    "judgments",
    1,
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("order", pa.int32(), nullable=False),
    pa.field("sigma", pa.int32()),
    pa.field("rationale", pa.string()),
    pa.field("status", pa.string()),
    pa.field("raw", pa.string()),
    pa.field("error", pa.string()),
)

CHECKS = _spec(
    "checks",
    1,
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("order", pa.int32(), nullable=False),
    pa.field("answer", pa.string()),
    pa.field("status", pa.string()),
)

ITEM_SCORES = _spec(
    "item_scores",
    1,
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("dimension", pa.string(), nullable=False),
    pa.field("language", pa.string()),
    pa.field("character", pa.string()),
    pa.field("character_type", pa.string()),
    pa.field("sigma1", pa.int32()),
    pa.field("sigma2", pa.int32()),
    pa.field("score", pa.float64(), nullable=False),
    pa.field("hallucinated", pa.bool_()),
)

MODEL_SCORES = _spec(
    "model_scores",
    1,
    pa.field("model", pa.string(), nullable=False),
    pa.field("dimension", pa.string(), nullable=False),
    pa.field("language", pa.string(), nullable=False),
    pa.field("character_type", pa.string(), nullable=False),
    pa.field("score", pa.float64()),
    pa.field("ci_low", pa.float64()),
    pa.field("ci_high", pa.float64()),
    pa.field("n", pa.int32()),
)
