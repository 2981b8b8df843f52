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
    if not isinstance(private, list) or not all(isinstance(k, str) for k in private):
        raise ValueError("'private' must be a list of the profile's keys")
    unknown = [k for k in private if k not in profile]
    if unknown:
        raise ValueError(f"'private' names a key that is not in the profile: '{unknown[0]}'")
    record["attributes"] = [
        {"key": str(k), "value": _attribute_text(str(k), v), "visibility": "private" if k in private else "public"}
        for k, v in profile.items()
    ]
    return record


def _attribute_text(key: str, value: Any) -> str:
    """A profile value as the prompts show it: text as it is, a YAML list as 'a, b', a mapping as 'k: v; k: v'
    (never Python's rendering of a list or a dict); anything nested deeper is an error naming the key."""
    def scalar(v: Any) -> bool:
        return v is None or isinstance(v, str | int | float)

    if value is None:
        return ""
    if scalar(value):
        return str(value)
    if isinstance(value, list) and all(scalar(v) for v in value):
        return ", ".join("" if v is None else str(v) for v in value)
    if isinstance(value, dict) and all(scalar(v) for v in value.values()):
        return "; ".join(f"{k}: {'' if v is None else v}" for k, v in value.items())
    raise ValueError(f"profile '{key}': expected text, a list of text or a mapping of text, found a nested "
                     f"{type(value).__name__}")


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
