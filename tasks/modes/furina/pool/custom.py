"""User scenes for the pool (`rpbench pool add`): JSON or YAML, one scene or a list, same schema as the pool."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from rpbench.storage.records import load_records
from rpbench.tasks.core.errors import InputError, first_error
from rpbench.tasks.modes.furina.pool.models import PoolScene


def load_custom_scenes(path: str | Path) -> list[PoolScene]:
    scenes = []
    for i, record in enumerate(load_records(path, "scene")):
        if not isinstance(record, dict):
            raise InputError(f"{path}: record {i}: expected a mapping with the scene's fields")
        record = {"source": "custom", **record}
        try:
            scenes.append(PoolScene.model_validate(record))
        except ValidationError as exc:
            field, msg = first_error(exc)
            raise InputError(f"{path}: record {i} ({record.get('scene_id', '?')}): field '{field}': {msg}") from None
    return scenes


def merge_scenes(existing: list[PoolScene], new: list[PoolScene], source: str) -> list[PoolScene]:
    """Append; a scene id already in the pool is an error, not a silent overwrite."""
    ids = {s.scene_id for s in existing}
    for s in new:
        if s.scene_id in ids:
            raise InputError(f"{source}: scene_id '{s.scene_id}' is already in the pool")
        ids.add(s.scene_id)
    return existing + new
