"""Character files: reading both forms a user may write, and writing the long form (YAML).

Long form:  {name, language, type, source?, attributes: [{key, value, visibility}, ...]}
Short form: {name, language, type, source?, profile: {key: value, ...}, private: [key, ...]}
A file holds one character or a list, as JSON or YAML.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rpbench.storage.tables import atomic_write_bytes
from rpbench.storage.user_files import load_records, validate_records
from rpbench.tasks.core.errors import InputError, duplicates
from rpbench.tasks.modes.furina.domain import Character


def from_short_form(record: dict[str, Any]) -> dict[str, Any]:
    """Turn {profile: {...}, private: [...]} into the long form's attribute list, order kept."""
    if "profile" not in record:
        return record
    record = dict(record)
    profile = record.pop("profile")
    private = record.pop("private", []) or []
    if not isinstance(profile, dict):
        raise ValueError("'profile' must be a mapping of key to value")
    unknown = [k for k in private if k not in profile]
    if unknown:
        raise ValueError(f"'private' names a key that is not in the profile: '{unknown[0]}'")
    record["attributes"] = [
        {"key": str(k), "value": "" if v is None else str(v), "visibility": "private" if k in private else "public"}
        for k, v in profile.items()
    ]
    return record


def load_characters(path: str | Path) -> list[Character]:
    """Every character in a file; the first problem raises an InputError naming file, character and field."""
    characters = validate_records(
        path, load_records(path, "character"), Character, "character",
        name_of=lambda i, r: str(r.get("name") or f"#{i}"), prepare=from_short_form,
    )
    dupes = duplicates([c.name for c in characters])
    if dupes:
        raise InputError(f"{path}: character {dupes[0]}: field 'name': appears more than once in the file")
    return characters


def write_characters(path: str | Path, characters: list[Character]) -> Path:
    path = Path(path)
    data = [c.model_dump(exclude_none=True) for c in characters]
    atomic_write_bytes(path, yaml.safe_dump(data, allow_unicode=True, sort_keys=False).encode("utf-8"))
    return path
