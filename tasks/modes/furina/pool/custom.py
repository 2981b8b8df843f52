"""Adding a user's own scenes to a pool (`rpbench pool add`)."""

from __future__ import annotations

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import Scene


def merge_scenes(existing: list[Scene], new: list[Scene], source: str) -> list[Scene]:
    """Append; a scene id already in the pool is an error, not a silent overwrite."""
    ids = {s.scene_id for s in existing}
    for s in new:
        if s.scene_id in ids:
            raise InputError(f"{source}: scene_id '{s.scene_id}' is already in the pool")
        ids.add(s.scene_id)
    return existing + new
