"""The test character schema, its two file forms, and validation with errors a user can act on.

Long form:  {name, language, type, source?, attributes: [{key, value, visibility}, ...]}
Short form: {name, language, type, source?, profile: {key: value, ...}, private: [key, ...]}
A file holds one character or a list, as JSON or YAML.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rpbench.storage.records import load_records
from rpbench.tasks.core.errors import InputError, duplicates
from rpbench.tasks.modes.furina.pool.models import Attribute

LANGUAGES = ("en", "zh")
TYPES = ("established", "synthesized")


class Character(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    language: str
    type: Literal["established", "synthesized"]
    source: str | None = None
    attributes: list[Attribute] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the name is empty")
        return v.strip()

    @field_validator("language")
    @classmethod
    def _known_language(cls, v: str) -> str:
        base = v.split("-")[0].lower()
        if base not in LANGUAGES:
            raise ValueError(f"unknown language '{v}' (known: {', '.join(LANGUAGES)}, as BCP-47 tags)")
        return base

    @field_validator("attributes")
    @classmethod
    def _clean_attributes(cls, attrs: list[Attribute]) -> list[Attribute]:
        dupes = duplicates([a.key for a in attrs])
        if dupes:
            raise ValueError(f"duplicate key '{dupes[0]}'")
        for a in attrs:
            if not a.value.strip():
                raise ValueError(f"empty value for key '{a.key}'")
        return attrs

    def public(self) -> list[Attribute]:
        return [a for a in self.attributes if a.visibility == "public"]


def _from_short_form(record: dict[str, Any]) -> dict[str, Any]:
    """Turn {profile: {...}, private: [...]} into the long form's attribute list, order kept."""
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


def _friendly(exc: ValidationError) -> tuple[str, str]:
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "missing":
        msg = "missing"
    if err["type"] == "literal_error" and loc and loc[-1] == "visibility":
        msg = f"unknown visibility '{err.get('input')}' (use public or private)"
    if err["type"] == "literal_error" and loc == ["type"]:
        msg = f"unknown type '{err.get('input')}' (use {' or '.join(TYPES)})"
    return ".".join(loc) or "record", msg


def parse_character(record: Any) -> Character:
    if not isinstance(record, dict):
        raise ValueError("expected a mapping with the character's fields")
    if "profile" in record:
        record = _from_short_form(record)
    return Character.model_validate(record)


def load_characters(path: str | Path) -> list[Character]:
    """Every character in a file; the first problem raises an InputError naming file, character and field."""
    path = Path(path)
    records = load_records(path, "character")
    out: list[Character] = []
    for i, record in enumerate(records):
        who = record.get("name") if isinstance(record, dict) and record.get("name") else f"#{i}"
        try:
            out.append(parse_character(record))
        except ValidationError as exc:
            field, msg = _friendly(exc)
            raise InputError(f"{path}: character {who}: field '{field}': {msg}") from None
        except ValueError as exc:
            raise InputError(f"{path}: character {who}: {exc}") from None
    dupes = duplicates([c.name for c in out])
    if dupes:
        raise InputError(f"{path}: character {dupes[0]}: field 'name': appears more than once in the file")
    return out
