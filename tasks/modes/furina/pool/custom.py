"""Adding a user's own scenes to a pool (`rpbench furina pool add`)."""

from __future__ import annotations

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.furina.domain import Scene


def merge_scenes(existing: list[Scene], new: list[Scene], source: str) -> list[Scene]:
    """Append the scenes that are not in the pool yet.

    A scene already in the pool exactly as given is left alone (adding the same file twice, or a script run
    again, changes nothing); a different scene under an id the pool has is an error, never an overwrite.
    """
    have = {s.scene_id: s for s in existing}
    added: list[Scene] = []
    for s in new:
        if s.scene_id in have:
            if have[s.scene_id] != s:
                raise InputError(f"{source}: scene_id '{s.scene_id}' is already in the pool, with other content "
                                 "(give this scene another id)")
            continue
        have[s.scene_id] = s
        added.append(s)
    return existing + added
