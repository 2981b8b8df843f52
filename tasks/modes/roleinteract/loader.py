"""Reading RoleInteract's released data files as they are published.

A file is a JSON list of items, each with ``dialogue`` (a list of ``{"from", "value"}``, or of one-key
``{speaker: text}`` objects as the paper describes them), ``instruction``, ``choices`` (letters A-H to
option text; absent for memory items), ``label`` (gold letters, or the keywords of a memory item) and
``meta`` (``lang``, ``category`` and, by category, ``name``, ``profile``, ``emotion``, ``source``, answers of
other models, ...). The released files carry Windows line endings and stray Windows-1252 characters: bytes
that are not UTF-8 are read as Windows-1252 (and counted), text is kept exactly as read (C1 control
characters included; prompts show them as the characters they stand for), and each item keeps its whole
record as JSON, so nothing in the file is lost. Anything unusable is an error naming the file, the item and
the field.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from rpbench.storage.user_files import read_user_bytes
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import Record
from rpbench.tasks.modes.roleinteract.catalog import (
    CATEGORIES,
    GROUP,
    GROUP_PREFERENCE,
    MEMORY,
    PREFERENCES,
    column_of,
)
from rpbench.tasks.modes.roleinteract.records import Choice, Item, Profile, Utterance

MAX_DATA_BYTES = 512 * 1024 * 1024  # the released memory file is tens of megabytes
REQUIRED = ("dialogue", "label", "meta")
ROLE_PLAYED = ("SA Style", "SA Know.", *MEMORY, *GROUP)  # columns where the model is a role
LETTERS = "ABCDEFGH"
_ESCAPED = re.compile("[\udc80-\udcff]")  # bytes that were not UTF-8, as surrogateescape keeps them
_C1 = re.compile("[\x80-\x9f]")


@dataclass(frozen=True)
class LoadedFile:
    items: list[Item]
    repaired_bytes: int  # bytes that were not UTF-8 and were read as Windows-1252
    dropped: list[str]  # unanswerable items left out (when asked), each as "file item N: why"


def readable(text: str) -> str:
    """``text`` with C1 control characters (U+0080-U+009F, what Windows-1252 punctuation becomes when a file is
    decoded as Latin-1) shown as the characters they stand for: a curly apostrophe, a dash, an ellipsis."""
    return _C1.sub(lambda m: _cp1252(ord(m.group())), text)


def _cp1252(byte: int) -> str:
    """A byte read as Windows-1252; the five bytes it leaves undefined become the C1 character of that number."""
    try:
        return bytes([byte]).decode("cp1252")
    except UnicodeDecodeError:
        return chr(byte)


def decode(data: bytes) -> tuple[str, int]:
    """UTF-8 text, with each byte that is not UTF-8 read as Windows-1252; and how many such bytes there were."""
    text = data.decode("utf-8-sig", errors="surrogateescape")
    bad = _ESCAPED.findall(text)
    if not bad:
        return text, 0
    return _ESCAPED.sub(lambda m: _cp1252(ord(m.group()) - 0xDC00), text), len(bad)


def read_text(path: Path) -> tuple[str, int]:
    return decode(read_user_bytes(path, "a RoleInteract JSON file", MAX_DATA_BYTES))


def _fail(path: Path, index: int, field: str, message: str) -> InputError:
    return InputError(f"{path}: item {index}: field '{field}': {message}")


class UnanswerableItem(InputError):
    """An item whose gold letter is none of its options: no answer can be right. SocialBench's own
    emotional_perception.json has one (item 758, gold D of A-C); a run refuses it unless asked to leave such
    items out (and then names each in the report)."""


def _text(value: Any, path: Path, index: int, field: str) -> str:
    if not isinstance(value, str):
        raise _fail(path, index, field, f"expected text, found {type(value).__name__}")
    return value


R = TypeVar("R", bound=Record)


class Pieces:
    """Utterances, options and profiles made once each per load and shared by the items that hold them.

    A released file repeats its characters' profiles, the options of a kind of question and the opening lines
    of dialogues over thousands of items; made once, 25,000 items take about a third of the memory. Items are
    records nobody changes, so sharing their parts is safe."""

    def __init__(self) -> None:
        self._made: dict[tuple[Any, ...], Record] = {}

    def get(self, cls: type[R], **fields: str) -> R:
        key = (cls, *fields.values())
        found = self._made.get(key)
        if found is None:
            found = self._made[key] = cls(**fields)
        return found  # type: ignore[return-value]


def _dialogue(raw: Any, path: Path, index: int, pieces: Pieces) -> list[Utterance]:
    if not isinstance(raw, list):
        raise _fail(path, index, "dialogue", "expected a list of utterances")
    out = []
    for k, u in enumerate(raw):
        where = f"dialogue.{k}"
        if isinstance(u, Mapping) and set(u) == {"from", "value"}:
            out.append(pieces.get(Utterance, speaker=_text(u["from"], path, index, f"{where}.from"),
                                  text=_text(u["value"], path, index, f"{where}.value")))
        elif isinstance(u, Mapping) and len(u) == 1 and set(u) & {"from", "value"}:
            # Half of the {"from", "value"} layout, not a speaker called "from" saying a name.
            lacking = ({"from", "value"} - set(u)).pop()
            raise _fail(path, index, f"{where}.{lacking}", "missing")
        elif isinstance(u, Mapping) and len(u) == 1:
            (speaker, text), = u.items()
            out.append(pieces.get(Utterance, speaker=str(speaker), text=_text(text, path, index, where)))
        else:
            raise _fail(path, index, where, 'expected {"from": speaker, "value": text} or {speaker: text}')
    return out


def _choices(raw: Any, path: Path, index: int, pieces: Pieces) -> list[Choice]:
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        raise _fail(path, index, "choices", "expected an object of option letters (A-H) to text")
    out = []
    for letter, text in raw.items():
        if letter not in LETTERS:
            raise _fail(path, index, f"choices.{letter}", "option letters are A to H")
        out.append(pieces.get(Choice, letter=letter, text=_text(text, path, index, f"choices.{letter}")))
    return out


def _profiles(raw: Any, target: str | None, path: Path, index: int, pieces: Pieces) -> list[Profile]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [pieces.get(Profile, name=target or "", text=raw)]
    if not isinstance(raw, Mapping):
        raise _fail(path, index, "meta.profile", "expected an object of role names to profiles, or a profile")
    return [pieces.get(Profile, name=str(k), text=_text(v, path, index, f"meta.profile.{k}")) for k, v in raw.items()]


def _polarity(meta: Mapping[str, Any], target: str | None, path: Path, index: int) -> str | None:
    """The members' majority preference: ``meta.polarity`` as given, or the most common value of
    ``meta.member_preferences`` over the members other than the target ("mixed" on a tie)."""
    given = meta.get("polarity")
    members = meta.get("member_preferences")
    if given is not None:
        if given not in (*PREFERENCES, "mixed"):
            raise _fail(path, index, "meta.polarity", f"unknown polarity '{given}' (use {', '.join(PREFERENCES)})")
        return str(given)
    if members is None:
        return None
    if not isinstance(members, Mapping) or any(v not in PREFERENCES for v in members.values()):
        raise _fail(path, index, "meta.member_preferences",
                    f"expected an object of member names to one of {', '.join(PREFERENCES)}")
    counts = Counter(v for k, v in members.items() if k != target).most_common()
    if not counts:
        return None
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return "mixed"
    return str(counts[0][0])


def parse_item(raw: Any, path: Path, index: int, pieces: Pieces | None = None) -> Item:
    """One released record as an ``Item``, or an error naming the file, the item and the field; its parts shared
    with the other items parsed with the same ``pieces``."""
    pieces = pieces if pieces is not None else Pieces()
    if not isinstance(raw, Mapping):
        raise InputError(f"{path}: item {index}: expected an object, found {type(raw).__name__}")
    for field in REQUIRED:
        if field not in raw:
            raise _fail(path, index, field, "missing")
    meta = raw["meta"]
    if not isinstance(meta, Mapping):
        raise _fail(path, index, "meta", "expected an object")
    language, category = meta.get("lang"), meta.get("category")
    if language not in ("en", "zh"):
        raise _fail(path, index, "meta.lang", f"unknown language '{language}' (use en, zh)")
    if category not in CATEGORIES:
        raise _fail(path, index, "meta.category", f"unknown category '{category}' (known: {', '.join(CATEGORIES)})")
    dialogue = _dialogue(raw["dialogue"], path, index, pieces)
    choices = _choices(raw.get("choices"), path, index, pieces)
    label = raw["label"]
    label = [label] if isinstance(label, str) else label
    if not isinstance(label, list) or not label or not all(isinstance(x, str) and x for x in label):
        raise _fail(path, index, "label", "expected a non-empty list of letters (or of keywords, for memory items)")
    column = column_of(category, len(dialogue))
    if column in MEMORY:
        if choices:
            raise _fail(path, index, "choices", "a memory item is answered in words, not by options")
    else:
        if not choices:
            raise _fail(path, index, "choices", "missing (a multiple-choice item needs its options)")
        letters = {c.letter for c in choices}
        wrong = [x for x in label if x not in letters]
        if wrong:
            raise UnanswerableItem(f"{path}: item {index}: field 'label': '{wrong[0]}' is not one of the options "
                                   f"({', '.join(sorted(letters))}), so no answer can be right")
    target = meta.get("name")
    if target is not None and not isinstance(target, str):
        raise _fail(path, index, "meta.name", "expected the role's name as text")
    if column in ROLE_PLAYED and not target:
        raise _fail(path, index, "meta.name", "missing (the model plays this role, so it needs its name)")
    profiles = _profiles(meta.get("profile"), target, path, index, pieces)
    instruction = _text(raw.get("instruction") or "", path, index, "instruction")
    if not dialogue and not instruction.strip():
        raise _fail(path, index, "dialogue", "empty, and so is 'instruction': the item asks nothing")
    group = column in GROUP
    return Item(
        item_id=f"{path.stem}:{index:05d}", source=path.name, index=index, language=language,
        category=sys.intern(category),
        column=column, dialogue=dialogue, instruction=instruction,
        choices=choices, label=label, target=target, profiles=profiles,
        raw=json.dumps(raw, ensure_ascii=False),
        group_size=(len(profiles) if len(profiles) > 1 else len({u.speaker for u in dialogue})) if group else None,
        target_preference=GROUP_PREFERENCE.get(column),
        polarity=_polarity(meta, target, path, index) if group else None)


def load_file(path: str | Path, pieces: Pieces | None = None, drop_unanswerable: bool = False) -> LoadedFile:
    """The file's items; an item no answer can get right is an error, or (``drop_unanswerable``) left out and
    named in ``dropped``."""
    path = Path(path)
    pieces = pieces if pieces is not None else Pieces()
    text, repaired = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON list of items, found {type(data).__name__}")
    if not data:
        raise InputError(f"{path}: the file holds no items")
    items, dropped = [], []
    for k, raw in enumerate(data):
        try:
            items.append(parse_item(raw, path, k, pieces))
        except UnanswerableItem as exc:
            if not drop_unanswerable:
                raise InputError(f"{exc} (--drop-unanswerable leaves such items out and names them in the "
                                 "report)") from None
            dropped.append(f"{path.name} {str(exc).removeprefix(f'{path}: ')}")
    return LoadedFile(items, repaired, dropped)


def load_files(paths: list[str], drop_unanswerable: bool = False) -> tuple[list[Item], dict[str, int], list[str]]:
    """Every item of every file (a file name given twice, or two files with one name, is an error: item ids
    are made from it), how many bytes of each file were read as Windows-1252, and the unanswerable items left
    out (``drop_unanswerable``; else such an item is an error)."""
    stems = Counter(Path(p).stem for p in paths)
    twice = [s for s, n in stems.items() if n > 1]
    if twice:
        raise InputError(f"--data: two files are named '{twice[0]}' (item ids are made from file names)")
    items, repaired, dropped, pieces = [], {}, [], Pieces()
    for p in paths:
        loaded = load_file(p, pieces, drop_unanswerable)
        items += loaded.items
        repaired[Path(p).name] = loaded.repaired_bytes
        dropped += loaded.dropped
    return items, repaired, dropped
