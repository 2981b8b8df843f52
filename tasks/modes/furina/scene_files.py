"""Scenes: the pool's table, and the JSON/YAML files users write for `rpbench furina pool add`."""

from __future__ import annotations

import json
from pathlib import Path

from rpbench.storage.tables import atomic_write_bytes, read_records, write_records
from rpbench.storage.user_files import load_records, validate_records
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.furina.domain import Scene
from rpbench.tasks.modes.furina.tables import SCENES


def write_scenes(path: str | Path, scenes: list[Scene]) -> Path:
    return write_records(path, scenes, SCENES)


def read_scenes(path: str | Path) -> list[Scene]:
    return read_records(path, SCENES)


def _check_playable(path: str | Path, i: int, scene: Scene) -> None:
    """A scene a test character can join: two characters at least, and every line spoken by one of them."""
    where = f"{path}: record {i} ({scene.scene_id})"
    if len(scene.characters) < 2:
        raise InputError(f"{where}: field 'characters': {len(scene.characters)} character; a scene needs two or "
                         "more (the test character takes one part and talks with the others)")
    names = [c.name for c in scene.characters]
    for k, line in enumerate(scene.original_dialogue):
        if line.speaker not in names:
            raise InputError(f"{where}: field 'original_dialogue.{k}.speaker': '{line.speaker}' is not one of the "
                             f"scene's characters ({', '.join(names)})")


def load_scene_file(path: str | Path, source: str = "custom") -> list[Scene]:
    """Scenes from a user file (JSON or YAML, one or a list), marked with ``source`` unless they say otherwise."""
    scenes = validate_records(
        path, load_records(path, "scene"), Scene, "record",
        name_of=lambda i, r: f"{i} ({r.get('scene_id', '?')})", prepare=lambda r: {"source": source, **r},
    )
    seen: set[str] = set()
    for i, scene in enumerate(scenes):
        _check_playable(path, i, scene)
        if scene.scene_id in seen:
            raise InputError(f"{path}: record {i} ({scene.scene_id}): field 'scene_id': the file already has a "
                             "scene with this id")
        seen.add(scene.scene_id)
    return scenes


def write_scene_file(path: str | Path, scenes: list[Scene]) -> Path:
    """Scenes as a JSON file that `rpbench furina pool add` accepts."""
    path = Path(path)
    text = json.dumps([s.model_dump() for s in scenes], ensure_ascii=False, indent=2)
    atomic_write_bytes(path, text.encode("utf-8"))
    return path
