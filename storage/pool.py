"""Reading and writing pool scenes as validated ``PoolScene`` objects."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from storage.schemas import SCENES
from storage.tables import read_rows, write_table
from tasks.errors import InputError
from tasks.pool.models import PoolScene


def write_scenes(path: str | Path, scenes: list[PoolScene]) -> Path:
    return write_table(path, [s.model_dump() for s in scenes], SCENES)


def read_scenes(path: str | Path) -> list[PoolScene]:
    out = []
    for i, row in enumerate(read_rows(path, SCENES)):
        try:
            out.append(PoolScene.model_validate(row))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            raise InputError(f"{path}: scene {i} ({row.get('scene_id')}): field '{field}': {err['msg']}") from None
    return out
