"""Answers a user already has, read as a model's replies: scored exactly as live ones, with no call.

A file of answers (JSONL, one ``{"id": ..., "answer": ...}`` per item, the answer under another name where a mode
declares one) stands for a model's replies. Each
answer goes through the same reading a live reply does (an empty one is a failure; a schema or a parser must
accept it), once: a live reply that cannot be read is shown back to the model, a given one cannot be, so it
stays unreadable.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rpbench.storage.user_files import jsonl_objects
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm.requests import CallResult, NoReply, Parser, Reply
from rpbench.tasks.llm.structured import parse_reply

GIVEN = "given"  # the model string recorded for answers read from a file


def given_reply(text: str | None, role: str, schema: type[BaseModel] | None = None,
                parse: Parser | None = None, missing: str = "no answer was given") -> CallResult[object]:
    """A given answer as the gateway would return it for a live reply with that text, on its only attempt."""
    if text is None:
        return NoReply(role, GIVEN, None, missing, 0)
    if not text.strip():
        return NoReply(role, GIVEN, text, "the reply is empty", 1, raw_replies=(text,))
    try:
        parsed = parse_reply(text, schema) if schema is not None else parse(text) if parse else None
    except ValueError as exc:
        return NoReply(role, GIVEN, text, str(exc), 1, raw_replies=(text,))
    return Reply(role, GIVEN, text, parsed, 1, True, (text,))


def read_answers(path: str | Path, known: Mapping[str, object] | None = None, field: str = "answer"
                 ) -> dict[str, str]:
    """id -> answer from a JSONL file whose answers are under ``field`` (a mode's ``answer_field``: ``reply``
    for a file of ``{"id", "reply"}``); a bad line, a repeated id or one that names no item is one InputError
    naming the file, the line and the field."""
    out: dict[str, str] = {}
    answer = field
    for where, record in jsonl_objects(path, "a file of answers", f"'id' and '{answer}'"):
        for field in ("id", answer):
            if not isinstance(record.get(field), str):
                raise InputError(f"{where}: field '{field}': {'missing' if field not in record else 'not text'}")
        key = record["id"]
        if key in out:
            raise InputError(f"{where}: field 'id': '{key}' appears more than once")
        if known is not None and key not in known:
            raise InputError(f"{where}: field 'id': '{key}' is no item of the data given")
        out[key] = record[answer]
    return out


def given_systems(values: list[str], option: str = "--answers") -> dict[str, str]:
    """``NAME=FILE`` (or ``FILE``, named by its stem) -> {name: file}; a missing file is an InputError."""
    out: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep:
            name, path = Path(value).stem, value
        if not name.strip():
            raise InputError(f"{option} {value}: the name before '=' is empty (give NAME=FILE; the name is the "
                             "leaderboard's row)")
        if Path(path).is_dir():
            raise InputError(f"{option} {value}: {path}: a folder, not a file of answers")
        if not Path(path).exists():
            raise InputError(f"{option} {value}: {path}: no such file")
        if not Path(path).is_file():  # a device or a pipe: read once, it would be gone for the rerun
            raise InputError(f"{option} {value}: {path}: not a regular file of answers")
        if name in out:
            raise InputError(f"{option}: two answer files are named '{name}'; give NAME=FILE")
        out[name] = path
    return out


def read_exchanges(path: str | Path, known: Collection[str], what: str, turns: str, fields: tuple[str, str],
                   id_means: str) -> dict[str, list[tuple[str, str]]]:
    """A file of transcripts a user already has (conversations, dialogues): JSONL of ``{"id": ..., turns: [{
    fields[0]: ..., fields[1]: ...}, ...]}`` as id -> its pairs; a bad line, a field, a repeated id or one not
    in ``known`` is one InputError naming the file, the line and the field."""
    out: dict[str, list[tuple[str, str]]] = {}
    for where, record in jsonl_objects(path, f"a file of {what}", f"'id' and '{turns}'"):
        key = record.get("id")
        if not isinstance(key, str):
            raise InputError(f"{where}: field 'id': missing (the id, {id_means})")
        if key not in known:
            raise InputError(f"{where}: field 'id': '{key}' is none of the {what} of the data given")
        items = record.get(turns)
        if not isinstance(items, list) or not items:
            raise InputError(f"{where}: field '{turns}': expected a list of {{{', '.join(fields)}}}")
        pairs = []
        for k, t in enumerate(items):
            if not isinstance(t, dict) or not all(isinstance(t.get(f), str) for f in fields):
                raise InputError(f"{where}: field '{turns}.{k}': expected {' and '.join(fields)} as text")
            pairs.append((t[fields[0]], t[fields[1]]))
        if key in out:
            raise InputError(f"{where}: field 'id': '{key}' appears more than once")
        out[key] = pairs
    return out


def given_results(ids: Sequence[str], path: str, role: str, field: str = "answer",
                  **reading: Any) -> list[CallResult[object]]:
    """The replies a file of answers gives the items ``ids`` (under ``field``), each read as ``given_reply``
    reads one (an item the file does not answer is a failure saying so)."""
    texts = read_answers(path, field=field)
    return [given_reply(texts.get(i), role, missing=f"{path} has no answer for this item", **reading) for i in ids]
