"""Reading CoSER's released files: the test set (a JSON list of given circumstances) and the simulation layout
(a JSON list of ``{book_title, i_p, i_c, circumstance, simulation: [{role, content}]}``, next-speaker entries
included). Anything unusable is an error naming the file, the record and the field."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rpbench.storage.user_files import read_user_text
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.coser.records import ENVIRONMENT, NEXT_SPEAKER, Circumstance, Line, Message, Motivation

MAX_BYTES = 256 * 1024 * 1024
_CHINESE = re.compile(r"[\u4e00-\u9fff]")
REQUIRED = ("book", "i_c", "plot", "scenario", "dialogues", "speaking_characters_w_env", "major_characters",
            "character_profiles")


def _fail(path: Path | str, index: int, field: str, message: str) -> InputError:
    return InputError(f"{path}: record {index}: field '{field}': {message}")


def _json_list(path: str | Path, what: str) -> list[Any]:
    """The file's JSON list of ``what`` (circumstance, simulation), or an error naming the file."""
    text = read_user_text(path, f"a CoSER file: a JSON list of {what}s", MAX_BYTES)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(data, list) or not data:
        raise InputError(f"{path}: expected a non-empty JSON list of {what}s")
    return data


def _names(value: Any, path: Path, index: int, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(x, str) and x.strip() for x in value):
        raise _fail(path, index, field, "expected a list of names")
    return list(value)


def _index(value: Any, path: Path, index: int, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _fail(path, index, field, "expected a whole number")
    return value


def _text(value: Any, path: Path, index: int, field: str, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise _fail(path, index, field, "expected text" if empty else "expected non-empty text")
    return value


def involved_profiles(speaking: list[str], profiles: Mapping[str, Any], key_characters: list[Any]) -> list[Line]:
    """The profile of each speaking character as CoSER builds it: the plot's description of a key character
    first, then the book-wide profile; characters with neither are left out."""
    described = {c.get("name"): c.get("description") for c in key_characters if isinstance(c, Mapping)}
    out = []
    for name in speaking:
        if name == ENVIRONMENT:
            continue
        profile = str(profiles.get(name) or "")
        description = described.get(name)
        if isinstance(description, str):
            profile = description.strip("\n") + "\n\n" + profile.strip("\n")
        profile = profile.strip(" \n")
        if profile:
            out.append(Line(speaker=name, text=profile))
    return out


def _thought(raw: Any, path: Path, index: int, n: int) -> Motivation:
    """A key character's inner thought: ``thought`` in the released test set, ``motivation`` in its example set.
    An entry with neither is an error (an actor would silently act without one); an empty one is kept, and
    counted where the scene is acted."""
    where = f"key_characters.{n}"
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str) or not raw["name"].strip():
        raise _fail(path, index, where, "expected {\"name\": ..., \"thought\": ...}")
    given = [k for k in ("thought", "motivation") if k in raw]
    if not given:
        raise _fail(path, index, f"{where}.thought", f"missing ({raw['name']}'s inner thought; the example set "
                                                     "calls it 'motivation')")
    text = raw[given[0]]
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise _fail(path, index, f"{where}.{given[0]}", "expected text")
    return Motivation(name=raw["name"], text=text)


def parse_circumstance(raw: Any, path: Path, index: int) -> Circumstance:
    if not isinstance(raw, Mapping):
        raise InputError(f"{path}: record {index}: expected an object, found {type(raw).__name__}")
    for field in REQUIRED:
        if field not in raw:
            raise _fail(path, index, field, "missing")
    plot = raw["plot"]
    if not isinstance(plot, Mapping):
        raise _fail(path, index, "plot", "expected an object")
    i_p = _index(plot.get("i_p", raw.get("i_p")), path, index, "plot.i_p" if "i_p" in plot else "i_p")
    if "i_p" in plot and "i_p" in raw and _index(raw["i_p"], path, index, "i_p") != i_p:
        raise _fail(path, index, "i_p", f"{raw['i_p']} disagrees with plot.i_p ({i_p})")
    _index(raw["i_c"], path, index, "i_c")
    book = _text(raw["book"], path, index, "book")
    speaking = _names(raw["speaking_characters_w_env"], path, index, "speaking_characters_w_env")
    if ENVIRONMENT not in speaking:
        speaking = [*speaking, ENVIRONMENT]
    if len(speaking) < 2:
        raise _fail(path, index, "speaking_characters_w_env", "a scene needs a character besides the Environment")
    major = _names(raw["major_characters"], path, index, "major_characters")
    profiles = raw["character_profiles"]
    if not isinstance(profiles, Mapping):
        raise _fail(path, index, "character_profiles", "expected an object of names to profiles")
    dialogues = raw["dialogues"]
    if not isinstance(dialogues, list) or not dialogues:
        raise _fail(path, index, "dialogues", "expected the original conversation as a non-empty list")
    original = []
    for k, turn in enumerate(dialogues):
        if not isinstance(turn, Mapping) or not isinstance(turn.get("character"), str) \
                or not isinstance(turn.get("message"), str):
            raise _fail(path, index, f"dialogues.{k}", "expected {\"character\": name, \"message\": text}")
        original.append(Line(speaker=turn["character"], text=turn["message"]))
    key_characters = raw.get("key_characters") or []
    if not isinstance(key_characters, list):
        raise _fail(path, index, "key_characters", "expected a list")
    motivations = [_thought(k, path, index, n) for n, k in enumerate(key_characters)]
    plot_characters = plot.get("key_characters") or []
    if not isinstance(plot_characters, list):
        raise _fail(path, index, "plot.key_characters", "expected a list")
    # What becomes an actor's profile must be text: a number or an object would reach the prompt as Python's
    # rendering of it (every released record holds text here).
    for n, c in enumerate(plot_characters):
        if not isinstance(c, Mapping) or not isinstance(c.get("name"), str):
            raise _fail(path, index, f"plot.key_characters.{n}", "expected {\"name\": ..., \"description\": ...}")
        if not isinstance(c.get("description"), str | None):
            raise _fail(path, index, f"plot.key_characters.{n}.description", "expected text")
    for name in speaking:
        if not isinstance(profiles.get(name), str | None):
            raise _fail(path, index, f"character_profiles.{name}", "expected text (the character's profile)")
    summary = plot.get("summary", "")
    sample = str(raw["scenario"]) + "".join(t.text for t in original)
    chinese = len(_CHINESE.findall(sample))
    return Circumstance(
        circumstance_id=f"{book}-{i_p}-{raw['i_c']}", book=book, i_p=i_p, i_c=raw["i_c"],
        tag=str(raw.get("tag") or ""), language="zh" if chinese > 0.05 * len(sample) else "en",
        scenario=_text(raw["scenario"], path, index, "scenario"),
        plot_summary=_text(summary, path, index, "plot.summary", empty=True), speaking=speaking, major=major,
        profiles=involved_profiles(speaking, profiles, plot_characters), motivations=motivations,
        original=original, raw=json.dumps(raw, ensure_ascii=False))


def load_circumstances(paths: list[str]) -> list[Circumstance]:
    """Every circumstance of every file, in order; a circumstance given twice is an error."""
    out: list[Circumstance] = []
    seen: dict[str, str] = {}
    for p in paths:
        path = Path(p)
        for k, raw in enumerate(_json_list(path, "circumstance")):
            c = parse_circumstance(raw, path, k)
            if c.circumstance_id in seen:
                raise _fail(path, k, "i_c", f"circumstance '{c.circumstance_id}' appears twice "
                                            f"(also in {seen[c.circumstance_id]})")
            seen[c.circumstance_id] = str(path)
            out.append(c)
    return out


def read_simulations(path: str | Path, known: Mapping[str, Circumstance] | None = None) -> dict[str, list[Message]]:
    """Released simulations (CoSER's layout) by circumstance id, as messages of the system named later; a
    simulation of a circumstance not among ``known`` is an error (a file may hold more than --limit keeps)."""
    path = Path(path)
    out: dict[str, list[Message]] = {}
    for k, raw in enumerate(_json_list(path, "simulation")):
        if not isinstance(raw, Mapping):
            raise InputError(f"{path}: record {k}: expected an object, found {type(raw).__name__}")
        for field in ("book_title", "i_p", "i_c", "simulation"):
            if field not in raw:
                raise _fail(path, k, field, "missing")
        cid = f"{raw['book_title']}-{raw['i_p']}-{raw['i_c']}"
        if known is not None and cid not in known:
            raise _fail(path, k, "book_title", f"circumstance '{cid}' is not in the data given")
        if cid in out:
            raise _fail(path, k, "i_c", f"circumstance '{cid}' appears twice")
        messages = raw["simulation"]
        if not isinstance(messages, list) or not messages:
            raise _fail(path, k, "simulation", "expected a non-empty list of {\"role\", \"content\"}")
        rows = []
        speaking = set(known[cid].speaking) | {NEXT_SPEAKER} if known is not None else None
        for n, m in enumerate(messages):
            if not isinstance(m, Mapping) or not isinstance(m.get("role"), str) \
                    or not isinstance(m.get("content"), str):
                raise _fail(path, k, f"simulation.{n}", "expected {\"role\": name, \"content\": text}")
            if speaking is not None and m["role"] not in speaking:
                raise _fail(path, k, f"simulation.{n}.role", f"'{m['role']}' does not speak in this circumstance "
                                                             f"(its speakers: {', '.join(sorted(speaking))})")
            rows.append(Message(circumstance_id=cid, model="", index=n, role=m["role"], content=m["content"],
                                decided_by="given"))
        out[cid] = rows
    return out
