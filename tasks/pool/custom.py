"""User scenes for the pool (`rpbench pool add`): JSON or YAML, one scene or a list, same schema as the pool."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from pydantic import ValidationError

from tasks.errors import InputError
from tasks.pool.models import PoolScene


def load_custom_scenes(path: str | Path) -> list[PoolScene]:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot parse ({str(exc).splitlines()[0]})") from None
    records = data if isinstance(data, list) else [data]
    scenes = []
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise InputError(f"{path}: record {i}: expected a mapping with the scene's fields")
        record = {"source": "custom", **record}
        try:
            scenes.append(PoolScene.model_validate(record))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            raise InputError(f"{path}: record {i} ({record.get('scene_id', '?')}): field '{field}': {err['msg']}") from None
    return scenes


def merge_scenes(existing: list[PoolScene], new: list[PoolScene], source: str) -> list[PoolScene]:
    """Append; a scene id already in the pool is an error, not a silent overwrite."""
    ids = {s.scene_id for s in existing}
    for s in new:
        if s.scene_id in ids:
            raise InputError(f"{source}: scene_id '{s.scene_id}' is already in the pool")
        ids.add(s.scene_id)
    return existing + new
