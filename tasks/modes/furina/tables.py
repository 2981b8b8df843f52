"""FURINA's tables: scenes, characters, items, generations and judgments, and those of its pool, builder and
evaluation (the tables every mode writes, calls and failures, are in ``rpbench.storage.schemas``)."""

from __future__ import annotations

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.modes.furina.domain import Character, Generation, Item, Judgment, Scene
from rpbench.tasks.modes.furina.records import (
    BookRecord,
    BuildStats,
    Check,
    Chunk,
    DialogueTurn,
    DroppedScene,
    Extraction,
    Grade,
    ItemScore,
    PoolStats,
    RawScene,
    SourceModelCount,
)

# One self-contained scene per row: its characters and dialogue are nested lists.
SCENES = TableSpec("scenes", 2, Scene)
# Test characters, as synthesis writes them before they become a characters file.
CHARACTERS = TableSpec("characters", 1, Character)
ITEMS = TableSpec("items", 2, Item)
GENERATIONS = TableSpec("generations", 2, Generation)
JUDGMENTS = TableSpec("judgments", 2, Judgment)

# -- the character-scene pool
BOOKS = TableSpec("books", 2, BookRecord)
CHUNKS = TableSpec("chunks", 2, Chunk)
EXTRACTIONS = TableSpec("extractions", 1, Extraction)
RAW_SCENES = TableSpec("raw_scenes", 1, RawScene)
DROPPED_SCENES = TableSpec("dropped_scenes", 2, DroppedScene)
POOL_STATS = TableSpec("pool_stats", 2, PoolStats)
# -- the benchmark builder
DIALOGUES = TableSpec("dialogues", 3, DialogueTurn)
GRADES = TableSpec("grades", 1, Grade)
BUILD_STATS = TableSpec("build_stats", 3, BuildStats)
SOURCE_MODELS = TableSpec("source_models", 1, SourceModelCount)
# -- evaluation
CHECKS = TableSpec("checks", 2, Check)
ITEM_SCORES = TableSpec("item_scores", 3, ItemScore)
