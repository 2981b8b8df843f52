"""Reading a benchmark folder: its items and the characters and scenes they refer to, checked together."""

from __future__ import annotations

import json
from pathlib import Path

from rpbench.storage.tables import read_records, write_records
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.furina.character_files import load_characters
from rpbench.tasks.modes.furina.dimensions import DIMENSIONS
from rpbench.tasks.modes.furina.evaluation.run import Bench
from rpbench.tasks.modes.furina.scene_files import read_scenes
from rpbench.tasks.modes.furina.tables import ITEMS, SCENES

CHARACTERS_FILE = "characters.yaml"


def bench_files(bench: str | Path) -> dict[str, str]:
    """The three files of a benchmark folder; an InputError names the first that is missing."""
    folder = Path(bench)
    files = {"items": folder / ITEMS.filename, "characters": folder / CHARACTERS_FILE,
             "scenes": folder / SCENES.filename}
    for path in files.values():
        if not path.is_file():
            raise InputError(f"{bench}: no {path.name} (build a benchmark first: rpbench furina build)")
    return {k: str(v) for k, v in files.items()}


def first_items(items: str, n: int, folder: str | Path) -> str:
    """A copy of the items table holding its first ``n`` items, in ``folder``: the stages read it as they read
    the whole table, and its content (not its name) keys their cache."""
    path = Path(folder) / f"items-first-{n}.parquet"
    write_records(path, read_records(items, ITEMS)[:n], ITEMS)
    return str(path)


def load_bench(items: str, characters: str, scenes: str) -> Bench:
    """Items, characters by name and scenes by id; an item that refers to nothing is an InputError."""
    loaded = Bench(read_records(items, ITEMS), {c.name: c for c in load_characters(characters)},
                   {s.scene_id: s for s in read_scenes(scenes)})
    for it in loaded.items:
        if it.character not in loaded.characters or it.scene_id not in loaded.scenes:
            raise InputError(f"{items}: item {it.item_id}: field 'character'/'scene_id' refers to nothing in the bench")
        if it.dimension not in DIMENSIONS:
            raise InputError(f"{items}: item {it.item_id}: field 'dimension': unknown dimension '{it.dimension}' "
                             f"(use {', '.join(DIMENSIONS)})")
    return loaded


def shows_scene_extras(bench: str | Path) -> bool:
    """Whether the benchmark was built with the test character shown the scene's motivations and original
    dialogue (``--test-sees-scene-extras``): evaluation then shows models under test, and the judge, the same.
    A benchmark folder without a build manifest (made by hand) was not."""
    manifest = Path(bench) / "manifest.json"
    if not manifest.is_file():
        return False
    try:
        settings = json.loads(manifest.read_text(encoding="utf-8")).get("build_settings") or {}
    except json.JSONDecodeError:
        raise InputError(f"{manifest}: not valid JSON") from None
    return bool(settings.get("test_sees_scene_extras", False))
