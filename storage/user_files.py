"""Reading files of records a user writes (JSON or YAML; one record or a list), with one-line errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from rpbench.tasks.core.errors import InputError, first_error

R = TypeVar("R", bound=BaseModel)


def load_records(path: str | Path, what: str) -> list[Any]:
    """The raw records in a JSON or YAML file; ``what`` names them in errors ("scene", "character")."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot parse ({str(exc).splitlines()[0]})") from None
    if data is None:
        raise InputError(f"{path}: the file holds no {what}")
    return data if isinstance(data, list) else [data]


def validate_records(
    path: str | Path,
    records: list[Any],
    model: type[R],
    what: str,
    name_of: Callable[[int, dict[str, Any]], str],
    prepare: Callable[[dict[str, Any]], dict[str, Any]] = lambda r: r,
) -> list[R]:
    """Validate each raw record; the first problem is an InputError naming the file, the record and the field.

    ``name_of(index, record)`` says how to name a record in errors; ``prepare`` turns a record into the
    model's shape first (and may raise ValueError with a message for the user).
    """
    out = []
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise InputError(f"{path}: {what} #{i}: expected a mapping with the {what}'s fields")
        who = name_of(i, record)
        try:
            out.append(model.model_validate(prepare(record)))
        except ValidationError as exc:
            field, msg = first_error(exc)
            raise InputError(f"{path}: {what} {who}: field '{field}': {msg}") from None
        except ValueError as exc:
            raise InputError(f"{path}: {what} {who}: {exc}") from None
    return out
