"""The items a RoleInteract run covers, chosen from its data files by column, language and --limit."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.roleinteract.loader import load_files
from rpbench.tasks.modes.roleinteract.records import Item

_Selected = tuple[list[Item], dict[str, int], list[str]]
_selected: dict[tuple[Any, ...], _Selected] = {}
_selected_lock = threading.Lock()


def select(data: list[str], columns: list[str], languages: list[str], limit: int | None,
           drop_unanswerable: bool = False) -> _Selected:
    """The items a run covers (file order), the bytes of each file read as Windows-1252, and the unanswerable
    items left out (``drop_unanswerable``; else such an item is an error).

    Read once per process for the same files (by size and modification time) and choice: every model's
    answers stage and the report read the same items, and at 100,000 calls the copies were most of a run's
    memory. Items are records nobody changes, so the stages share them."""
    stamps = tuple((str(Path(p).resolve()), *_stamp(p)) for p in data)
    key = (stamps, tuple(columns), tuple(languages), limit, drop_unanswerable)
    with _selected_lock:
        found = _selected.get(key)
    if found is None:
        found = _select(data, columns, languages, limit, drop_unanswerable)
        with _selected_lock:
            _selected.clear()  # one choice at a time: a served process runs many, one after another
            _selected[key] = found
    return list(found[0]), dict(found[1]), list(found[2])


def _stamp(path: str) -> tuple[int, int]:
    try:
        st = Path(path).stat()
    except OSError:
        return (-1, -1)  # reading it says what is wrong
    return (st.st_size, st.st_mtime_ns)


def _select(data: list[str], columns: list[str], languages: list[str], limit: int | None,
            drop_unanswerable: bool) -> _Selected:
    items, repaired, dropped = load_files(data, drop_unanswerable)
    picked = [i for i in items if (not columns or i.column in columns) and (not languages or i.language in languages)]
    if limit is not None:
        seen: dict[tuple[str, str], int] = {}
        kept = []
        for i in picked:
            n = seen.get((i.column, i.language), 0)
            if n < limit:
                kept.append(i)
            seen[(i.column, i.language)] = n + 1
        picked = kept
    if not picked:
        raise InputError(f"--data: no item matches the columns and languages asked for ({', '.join(data)})")
    return picked, repaired, dropped
