"""Scenes: the pool's table, and the JSON/YAML files users write for `rpbench pool add`."""

from __future__ import annotations

import json
from pathlib import Path

from rpbench.storage.schemas import SCENES
from rpbench.storage.tables import atomic_write_bytes, read_records, write_records
from rpbench.storage.user_files import load_records, validate_records
from rpbench.tasks.core.records import Scene


def write_scenes(path: str | Path, scenes: list[Scene]) -> Path:
    return write_records(path, scenes, SCENES)


def read_scenes(path: str | Path) -> list[Scene]:
    return read_records(path, SCENES)


def load_scene_file(path: str | Path, source: str = "custom") -> list[Scene]:
    """Scenes from a user file (JSON or YAML, one or a list), marked with ``source`` unless they say otherwise."""
    return validate_records(
        path, load_records(path, "scene"), Scene, "record",
        name_of=lambda i, r: f"{i} ({r.get('scene_id', '?')})", prepare=lambda r: {"source": source, **r},
    )


def write_scene_file(path: str | Path, scenes: list[Scene]) -> Path:
    """Scenes as a JSON file that `rpbench pool add` accepts."""
    path = Path(path)
    text = json.dumps([s.model_dump() for s in scenes], ensure_ascii=False, indent=2)
    atomic_write_bytes(path, text.encode("utf-8"))
    return path
