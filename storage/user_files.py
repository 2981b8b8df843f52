"""Reading files a user writes (records in JSON or YAML, configs, annotations), with one-line errors.

Every such file is read through ``read_user_text``: it must exist, be a file, stay under a size limit
and be UTF-8. YAML goes through ``load_yaml``, which refuses documents whose aliases expand past a limit
(a "billion laughs" file is a few hundred bytes that expand to gigabytes). Both limits are far above any
real characters, scenes or models file, and each refusal is one line naming the file.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from rpbench.tasks.core.errors import InputError, first_error

R = TypeVar("R", bound=BaseModel)
MAX_USER_FILE_BYTES = 8 * 1024 * 1024  # a thousand detailed characters fit in 2 MB
MAX_YAML_VALUES = 200_000  # scalars, lists and mappings after aliases are expanded


def read_user_bytes(path: str | Path, what: str, max_bytes: int = MAX_USER_FILE_BYTES) -> bytes:
    """The bytes of a user's file, or an InputError naming the file: missing, a folder, too big."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a file (expected {what})")
    size = path.stat().st_size
    if size > max_bytes:
        raise InputError(f"{path}: {size / 2**20:.1f} MB is over the {max_bytes / 2**20:.0f} MB limit for {what}")
    return path.read_bytes()


def read_user_text(path: str | Path, what: str, max_bytes: int = MAX_USER_FILE_BYTES) -> str:
    """The text of a user's file, or an InputError naming the file: missing, a folder, too big, not UTF-8."""
    path = Path(path)
    data = read_user_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}: line {line}: not UTF-8 (byte 0x{data[exc.start]:02x}); save {what} as UTF-8"
                         ) from None


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many values ``node`` becomes once every alias is copied out (memoised: aliases share nodes)."""
    key = id(node)
    if key not in memo:
        memo[key] = 1  # placeholder; PyYAML refuses recursive anchors before we get here
        if isinstance(node, yaml.SequenceNode):
            memo[key] = 1 + sum(_expanded_size(child, memo) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            memo[key] = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    return memo[key]


# libyaml's loader when PyYAML was built with it (ten times faster), PyYAML's own otherwise.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str, path: str | Path, max_values: int = MAX_YAML_VALUES) -> Any:
    """``yaml.safe_load`` that refuses a document whose aliases expand to more than ``max_values`` values."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = _expanded_size(node, {})
        if size > max_values:
            raise InputError(f"{path}: YAML aliases expand to {size:,} values (limit {max_values:,}); "
                             "write the values out instead of repeating anchors")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def parse_json_or_yaml(path: str | Path, what: str, max_bytes: int = MAX_USER_FILE_BYTES) -> Any:
    """The data in a user's JSON (by suffix) or YAML file, with one-line errors."""
    text = read_user_text(path, what, max_bytes)
    try:
        return json.loads(text) if Path(path).suffix.lower() == ".json" else load_yaml(text, path)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: cannot parse ({str(exc).splitlines()[0]})") from None


def files_in(paths: Sequence[str], keep: Callable[[Path], bool], what: str, hint: str = "") -> list[str]:
    """``paths`` with each folder replaced by the files in it that ``keep`` accepts, by name (a release's own
    folder, as downloaded, or a folder of books); a folder holding none is an error that says what it lacks."""
    out: list[str] = []
    for path in map(Path, paths):
        if not path.is_dir():
            out.append(str(path))
            continue
        found = sorted(str(f) for f in path.iterdir() if f.is_file() and keep(f))
        if not found:
            raise InputError(f"{path}: no {what} in this folder{f' ({hint})' if hint else ''}")
        out += found
    return out


def load_records(path: str | Path, what: str, max_bytes: int = MAX_USER_FILE_BYTES) -> list[Any]:
    """The raw records in a JSON or YAML file; ``what`` names them in errors ("scene", "character")."""
    data = parse_json_or_yaml(path, f"a {what} file", max_bytes)
    if data is None or data == []:  # `[]` too: an empty pool or cast must not pass for a checked one
        raise InputError(f"{path}: the file holds no {what}")
    return data if isinstance(data, list) else [data]


def jsonl_objects(path: str | Path, what: str, fields: str,
                  max_bytes: int = MAX_USER_FILE_BYTES) -> list[tuple[str, dict[str, Any]]]:
    """The objects of a JSON Lines file, each with where it is ("FILE: line N") for the errors its reader
    raises; a line that is not a JSON object, or a file with none, is an InputError naming the file and line.
    ``what`` names the file ("a file of answers"), ``fields`` what an object should hold."""
    out = []
    for n, line in enumerate(read_user_text(path, what, max_bytes).splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}: line {n}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise InputError(f"{where}: expected an object with {fields}")
        out.append((where, record))
    if not out:
        raise InputError(f"{path}: no records in the file")
    return out


def language_field(where: str, record: dict[str, Any], languages: Sequence[str] | None, whose: str) -> str:
    """A record's ``language`` (``en`` if absent), one its prompts are written in (``languages``; None: any
    text); else an InputError naming the record and the field, and ``whose`` languages there are ("the
    quiz's")."""
    language = record.get("language", "en")
    if not isinstance(language, str) or (languages is not None and language not in languages):
        shown = f"'{language}'" if isinstance(language, str) else f"{language!r} (not a text)"
        raise InputError(f"{where}: field 'language': {shown} has no prompt"
                         + (f" ({whose} languages: {', '.join(languages)})" if languages else ""))
    return language


def new_id(where: str, record: dict[str, Any], seen: set[str]) -> str:
    """A record's ``id``, not one of ``seen`` (then added to it); else an InputError naming the record."""
    if record["id"] in seen:
        raise InputError(f"{where}: field 'id': '{record['id']}' appears more than once")
    seen.add(record["id"])
    return str(record["id"])


def load_rows(path: str | Path, what: str, fields: str) -> list[dict[str, Any]]:
    """The rows of a CSV or JSON Lines file (by suffix: ``.csv``, else one JSON object per line).

    ``what`` names the file in errors ("an annotations file"), ``fields`` what a row should hold.
    """
    path = Path(path)
    if path.suffix.lower() != ".csv":
        return [row for _where, row in jsonl_objects(path, f"{what} (CSV or JSONL)", fields)]
    rows = list(csv.DictReader(io.StringIO(read_user_text(path, f"{what} (CSV or JSONL)"), newline="")))
    if not rows:
        raise InputError(f"{path}: no records in the file")
    return rows


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


class Fields:
    """One record of a user's file read field by field, each problem an InputError naming the file, the record
    and the field (``where``: "file: record 3"). A path is the field's keys joined by dots ("messages.output")."""

    def __init__(self, record: Any, where: str) -> None:
        if not isinstance(record, dict):
            raise InputError(f"{where}: not an object")
        self.record, self.where = record, where

    def get(self, path: str) -> Any:
        found: Any = self.record
        for key in path.split("."):
            found = found.get(key) if isinstance(found, dict) else None
        return found

    def fail(self, path: str, problem: str) -> InputError:
        return InputError(f"{self.where}: field '{path}': {problem}")

    def text(self, path: str, required: bool = True, blank: tuple[str, ...] = ()) -> str | None:
        """Text (a number as written); missing, empty or one of ``blank`` ("N/A") is None, or an error if
        ``required``. A mapping (a profile kept as fields) is its fields, one per line."""
        value = self.get(path)
        if isinstance(value, dict) and value:
            return "\n".join(f"{k}: {v}" for k, v in value.items())
        if value is None or value == "" or (isinstance(value, str) and value.strip() in blank):
            if required:
                raise self.fail(path, "missing")
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise self.fail(path, "not text")
        return value

    def number(self, path: str) -> float | None:
        value = self.get(path)
        if value is None or value == "":
            return None
        try:
            return float(value)
        except (TypeError, ValueError):
            raise self.fail(path, f"'{value}' is not a number") from None


def whole_number(value: object) -> int:
    """An integer as a person writes one in a CSV or JSON file (3, "3", 3.0, "3.0"); anything else, 3.5 and
    true included, raises ValueError (``int()`` would read 3.5 as 3 and true as 1 without a word)."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        return value
    number = float(value.strip()) if isinstance(value, str) else value
    if isinstance(number, float) and number.is_integer():
        return int(number)
    raise ValueError(value)


# -- where a run writes -----------------------------------------------------------------------------
SQLITE_HEADER = b"SQLite format 3\x00"


def _first_existing(path: Path) -> Path:
    for candidate in [path, *path.parents]:
        if candidate.exists():
            return candidate
    return Path(".")


def _writable_parent(path: Path) -> None:
    parent = _first_existing(path.parent if path.parent != path else path)
    if not parent.is_dir():
        raise ValueError(f"{path}: {parent} is a file, so nothing can be written under it")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"{path}: {parent} is not writable")


def check_output_folder(value: str) -> str:
    """A folder a run writes into: an existing writable folder, or one that can be made. ValueError if not."""
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{path} is a file, not a folder")
    if path.is_dir() and not os.access(path, os.W_OK):
        raise ValueError(f"{path} is not writable")
    _writable_parent(path)
    return value


def check_output_file(value: str) -> str:
    """A file a run writes: not a folder, in a folder that exists or can be made and is writable."""
    path = Path(value)
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not a file")
    _writable_parent(path)
    return value


def check_cache_file(value: str | None) -> str | None:
    """A call cache: absent (made on first use), empty, or a SQLite database; never another kind of file."""
    if value is None:
        return value
    check_output_file(value)
    path = Path(value)
    if path.is_file() and path.stat().st_size:
        with path.open("rb") as fh:
            if fh.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                raise ValueError(f"{path} is not a SQLite call cache (give a new file name, or an earlier cache)")
        # Its list of tables (nothing written): a damaged first page shows here, not in the middle of a run. Not
        # opened read-only: that would leave the journal files of a WAL database beside it.
        try:
            with contextlib.closing(sqlite3.connect(path)) as db:
                db.execute("SELECT name FROM sqlite_master").fetchall()
        except sqlite3.Error as exc:
            raise ValueError(f"{path}: a damaged SQLite file ({exc}); give a new file name, or an earlier "
                             "cache") from None
    return value
