"""CharacterBench's released files (one per dimension, named by it) as items, in Chinese as released or in
English from ``translation_en``; a record that cannot be read is an error naming file, record and field."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rpbench.storage.user_files import Fields, files_in, parse_json_or_yaml
from rpbench.tasks.core.errors import InputError, unknown_name
from rpbench.tasks.modes.characterbench.dimensions import DIMENSIONS, Dimension, dimension_of
from rpbench.tasks.modes.characterbench.records import Item, Turn

MAX_BYTES = 256 * 2**20  # the release's largest dimension files are tens of MB
NONE = ("N/A", "None")  # how the release writes a field it has no value for


def _turns(f: Fields, user: str, character: str) -> list[Turn]:
    """Each turn's side, from its speaker as the release's generation script reads it (``user``/``character``,
    or the user's or the character's name); a name that is neither answers the turn before it."""
    turns = f.get("dialogue")
    if not isinstance(turns, list):
        raise f.fail("dialogue", "missing or not a list")
    out: list[Turn] = []
    for n, t in enumerate(turns):
        text = Fields(t, f.where).text("utterance") if isinstance(t, dict) else None
        name = str(t.get("speaker", "")).strip() if isinstance(t, dict) else ""
        if text is None:
            raise f.fail(f"dialogue[{n}].utterance", "missing or not text")
        if name.lower() in ("user", user.strip().lower()):
            side = "user"
        elif name.lower() in ("character", character.strip().lower()) or (name and name in character):
            side = "character"
        else:
            side = "character" if out and out[-1].speaker == "user" else "user"
        out.append(Turn(speaker=side, text=text))  # type: ignore[arg-type]
    if not out or out[-1].speaker != "user":
        raise f.fail("dialogue", "must end with the user's turn the character answers")
    return out


def _reference(dim: Dimension, f: Fields, original: Fields, character: str) -> str | None:
    if dim.reference is None:
        return None
    path = ".".join(dim.reference)
    # The English record may lack the behaviour reference; the release then takes the Chinese one.
    found = f.get(path) if f.get(path) is not None or dim.name != "behavior_consistency_bot" else original.get(path)
    if dim.name == "memory_consistency":
        if not isinstance(found, list) or not all(isinstance(s, str) for s in found):
            raise f.fail(path, "missing or not a list of text")
        return "".join(f"{character}：{s}\n" for s in found)
    if not isinstance(found, str) or not found:
        raise f.fail(path, "missing" if found in (None, "") else "not text")
    return found  # as the release sends it, "N/A" included


def read_item(dim: Dimension, record: Any, index: int, language: str, path: str, released: bool = False) -> Item:
    original = Fields(record, f"{path}: record {index}")
    if released and original.text("response_messages.model", required=False) is None:  # a row of no system
        raise original.fail("response_messages.model", "missing (with no --model, or with --judge-released, the "
                                                       "file's own replies are judged under their systems' names)")
    f = original
    if language == "en":
        if not isinstance(original.get("translation_en"), dict):
            raise original.fail("translation_en", "missing (needed for --language en)")
        f = Fields(original.get("translation_en"), f"{original.where} (translation_en)")
    character = str(f.text("character_name", required=False) or original.text("character_name"))
    user = f.text("user_name", required=False, blank=NONE) or "user"
    f.text("character_profile")  # there and not blank
    # As the release's scripts pass it on: str() of what the file holds (a profile kept as fields is its repr).
    profile = str(f.get("character_profile"))
    reference = _reference(dim, f, original, character)
    user_profile = f.get("user_profile")
    return Item(item_id=f"{dim.name}:{original.text('id')}", dimension=dim.name, language=language,
                character=character, profile=profile, user=user,
                user_profile=None if user_profile is None else str(user_profile),
                greeting=f.text("greeting", required=False, blank=NONE), dialogue=_turns(f, user, character),
                reference=reference, reply=f.text("response_messages.response", required=False),
                reply_model=original.text("response_messages.model", required=False),
                human=_human_score(dim, original), released_judge=original.number(f"pred_{language}"))


def _human_score(dim: Dimension, f: Fields) -> float | None:
    """The person's score (``annotation_score``, else ``gold``), on the dimension's scale: one above its top
    would raise the divisor of every score of the file (all_eval.py divides by the file's highest)."""
    field = "annotation_score" if f.get("annotation_score") is not None else "gold"
    score = f.number(field)
    # Every scale starts at 1, but 0 is let through: it cannot raise the divisor, and the six released files
    # not stored here were never seen.
    top = dim.highest_top()
    if score is not None and not 0 <= score <= top:
        raise f.fail(field, f"{score:g} is off {dim.name}'s scale (1-{top})")
    return score


def load_file(path: str, languages: Sequence[str], released: bool = False) -> list[Item]:
    # Read first (a mistyped path is no such file), judged after the name (an empty file misnamed is its name).
    data = parse_json_or_yaml(path, "a CharacterBench item file", MAX_BYTES) or []
    data = data if isinstance(data, list) else [data]
    dim = dimension_of(Path(path).stem)
    if dim is None:
        raise InputError(f"{path}: the file's name must say its dimension, as the release names them (<dimension>"
                         f"_test.json): {unknown_name('dimension', Path(path).stem.removesuffix('_test'), DIMENSIONS)}")
    if not data:
        raise InputError(f"{path}: the file holds no items")
    items = [read_item(dim, record, n, lang, path, released) for lang in languages for n, record in enumerate(data)]
    twice = [key for key, n in Counter((i.item_id, i.language) for i in items).items() if n > 1]
    if twice:
        raise InputError(f"{path}: field 'id': '{twice[0][0].partition(':')[2]}' appears more than once")
    return items


def load_items(paths: Sequence[str], languages: Sequence[str], limit: int | None = None, released: bool = False
               ) -> list[Item]:
    """Every file's items in each language (the first ``limit`` of each file); a folder stands for its *_test.json
    (a misspelt dimension is named, not skipped); two files of one dimension are an error. ``released``: the
    files' own replies are judged, so each must name its system."""
    out: list[Item] = []
    dims: dict[str, str] = {}
    for path in files_in(paths, lambda f: f.suffix == ".json" and (f.stem.endswith("_test") or f.stem in DIMENSIONS),
                         "CharacterBench files", "named <dimension>_test.json, as the release names them"):
        items = load_file(path, languages, released)
        dim = items[0].dimension
        if dim in dims:
            raise InputError(f"{path}: a second file for dimension {dim} (the first: {dims[dim]})")
        dims[dim] = path
        for lang in languages:
            out += [i for i in items if i.language == lang][:limit]
    return out
