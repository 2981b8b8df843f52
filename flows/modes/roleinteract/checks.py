"""RoleInteract's input checks, run by the command before any flow starts (and by the flow itself).

Nothing here imports Prefect or the gateway, so a bad data file or an unknown model is one line at once."""

from __future__ import annotations

from rpbench.flows.kit.registry import builtin_roles
from rpbench.flows.modes.roleinteract.settings import RoleInteractSettings
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm import load_models_config
from rpbench.tasks.llm.given import given_systems, read_answers
from rpbench.tasks.llm.names import resolve_all
from rpbench.tasks.modes.roleinteract.loader import load_files
from rpbench.tasks.modes.roleinteract.records import Item


def select(data: list[str], columns: list[str], languages: list[str], limit: int | None
           ) -> tuple[list[Item], dict[str, int]]:
    """The items a run covers (file order), and the bytes of each file read as Windows-1252."""
    items, repaired = load_files(data)
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
    return picked, repaired


def check_run(s: RoleInteractSettings) -> dict[str, str]:
    """Models resolved to roles, the data and the answer files read: every input error before any call."""
    items, _ = select(s.data, s.columns, s.languages, s.limit)
    given = check_answers(s, items)
    roles = resolve_all(load_models_config(s.models_file), s.models, builtin_roles(), like="roleinteract-player",
                        option="--model")
    both = sorted(set(roles) & set(given))
    if both:
        raise InputError(f"--answers: '{both[0]}' is also a --model; name the answers otherwise (NAME=FILE)")
    return roles


def check_answers(s: RoleInteractSettings, items: list[Item]) -> dict[str, str]:
    """--answers as {name: file}, each file read and its ids checked against the items (of all the data: a
    file may answer more than --limit or --column keep)."""
    given = given_systems(s.answers)
    every = {i.item_id: i for i in load_files(s.data)[0]}
    for path in given.values():
        read_answers(path, every)
    return given
