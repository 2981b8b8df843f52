"""Reading user files of records (JSON or YAML; one record or a list) with one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from rpbench.tasks.core.errors import InputError


def load_records(path: str | Path, what: str) -> list[Any]:
    """The records in a JSON or YAML file; ``what`` names them in errors ("scene", "character")."""
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
