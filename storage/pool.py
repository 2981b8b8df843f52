"""Reading and writing pool scenes as validated ``PoolScene`` objects."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from rpbench.storage.schemas import SCENES
from rpbench.storage.tables import read_rows, write_table
from rpbench.tasks.core.errors import InputError, first_error
from rpbench.tasks.modes.furina.pool.models import PoolScene


def write_scenes(path: str | Path, scenes: list[PoolScene]) -> Path:
    return write_table(path, [s.model_dump() for s in scenes], SCENES)


def read_scenes(path: str | Path) -> list[PoolScene]:
    out = []
    for i, row in enumerate(read_rows(path, SCENES)):
        try:
            out.append(PoolScene.model_validate(row))
        except ValidationError as exc:
            field, msg = first_error(exc)
            raise InputError(f"{path}: scene {i} ({row.get('scene_id')}): field '{field}': {msg}") from None
    return out
