"""RoleInteract's input checks, run by the command before any flow starts (and by the flow itself).

Nothing here imports Prefect or the gateway, so a bad data file or an unknown model is one line at once."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from rpbench.flows.kit.front.registry import builtin_roles, models_config
from rpbench.flows.kit.front.systems import System, read_systems
from rpbench.flows.modes.roleinteract.settings import RoleInteractSettings
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm.given import read_answers
from rpbench.tasks.llm.names import resolve_all
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


def check_run(s: RoleInteractSettings) -> list[System]:
    """The systems (models resolved to roles, answer files read and their ids checked against the items of
    all the data: a file may answer more than --limit or --column keep): every input error before any call."""
    select(s.data, s.columns, s.languages, s.limit, s.drop_unanswerable)
    roles = resolve_all(models_config(s.models_file), s.models, builtin_roles(), like="roleinteract-player",
                        option="--model")
    systems = read_systems(roles, s.answers)
    given = [x.answers for x in systems if x.answers]
    if given:  # every item of the data, not only those selected: read again only when there are answers to check
        every = {i.item_id: i for i in load_files(s.data, s.drop_unanswerable)[0]}
        for path in given:
            read_answers(path, every)
    return systems
