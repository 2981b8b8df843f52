"""Writing character files (YAML, long form) and scene files for `rpbench pool add` (JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from rpbench.storage.tables import atomic_write_bytes
from rpbench.tasks.modes.furina.characters.schema import Character
from rpbench.tasks.modes.furina.pool.models import PoolScene


def write_characters(path: str | Path, characters: list[Character]) -> Path:
    path = Path(path)
    data = [c.model_dump(exclude_none=True) for c in characters]
    atomic_write_bytes(path, yaml.safe_dump(data, allow_unicode=True, sort_keys=False).encode("utf-8"))
    return path


def write_scene_file(path: str | Path, scenes: list[PoolScene]) -> Path:
    path = Path(path)
    text = json.dumps([s.model_dump() for s in scenes], ensure_ascii=False, indent=2)
    atomic_write_bytes(path, text.encode("utf-8"))
    return path
