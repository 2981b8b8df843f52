"""Reading a PingPong settings file: character cards and situations per language.

Two spellings are read, as the user wrote them:
- rpbench's: ``{<lang>: {characters: [{name, system_prompt, summary, example_dialogue?, greeting?, tags?}],
  situations: [{id?, text, tags?, turns?}]}}``;
- PingPong's published layout, unchanged: ``char_name``, ``example_prompt``, ``initial_message`` (possibly
  empty), ``num_turns``, plus ``version`` and ``*_prompt_path`` keys, which rpbench ignores (its prompts are
  its own). PingPong's code reads a card's greeting from ``initial_message`` only: a greeting its own
  settings_v2.json spells ``greeting`` or ``inital_message`` (3 of its 8 English cards) is never sent, and
  rpbench does the same unless asked for every spelling (``any_greeting``); such cards are listed.
Anything else is an error naming the file, the language, the record and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rpbench.storage.user_files import parse_json_or_yaml
from rpbench.tasks.core.errors import InputError, duplicates, first_error
from rpbench.tasks.core.languages import is_language_code
from rpbench.tasks.modes.pingpong.records import Card, Situation

# field as written -> field of the record
CARD_FIELDS = {
    "name": "name", "char_name": "name",
    "system_prompt": "system_prompt", "summary": "summary", "tags": "tags",
    "example_dialogue": "example_dialogue", "example_prompt": "example_dialogue",
    "greeting": "greeting", "initial_message": "greeting", "inital_message": "greeting",
}
SITUATION_FIELDS = {"id": "situation_id", "text": "text", "tags": "tags", "turns": "num_turns",
                    "num_turns": "num_turns"}
LANGUAGE_KEYS = ("characters", "situations")
IGNORED = ("version",)  # and every *_prompt_path


# In PingPong's layout, the spellings of a greeting its code does not read.
UNREAD_GREETINGS = ("greeting", "inital_message")


@dataclass(frozen=True)
class Settings:
    """Cards and situations, each language on its own (a conversation never mixes languages)."""

    cards: dict[str, list[Card]]
    situations: dict[str, list[Situation]]
    # Cards (language/name) of PingPong's layout whose greeting is spelled as its code never reads it: not sent.
    unread_greetings: tuple[str, ...] = ()

    @property
    def languages(self) -> list[str]:
        return sorted(self.cards)

    def conversations(self) -> list[tuple[Card, Situation]]:
        """The full grid per language, in file order: every card in every situation."""
        return [(c, s) for lang in self.languages for c in self.cards[lang] for s in self.situations[lang]]


def _renamed(record: Mapping[str, Any], fields: Mapping[str, str], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise InputError(f"{where}: unknown field '{key}' (known: {known})")
        target = fields[key]
        if value == "" and target == "greeting":
            value = None  # PingPong's cards use an empty greeting for "none"
        if target in out and out[target] not in (None, value) and value is not None:
            raise InputError(f"{where}: field '{key}': gives {target} a second, different value")
        if value is not None or target not in out:
            out[target] = value
    return out


def _validated(model: type[Card] | type[Situation], data: dict[str, Any], where: str,
               written: Mapping[str, Any], fields: Mapping[str, str]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, msg = first_error(exc)
        # Name the field as the file spells it (num_turns, char_name), not as rpbench calls it.
        spelled = next((k for k in written if fields.get(k) == field),
                       next((k for k, v in fields.items() if v == field), field))
        raise InputError(f"{where}: field '{spelled}': {msg}") from None


def _records(block: Mapping[str, Any], key: str, where: str) -> list[Mapping[str, Any]]:
    items = block.get(key)
    if not isinstance(items, list) or not items:
        raise InputError(f"{where}: field '{key}': expected a non-empty list")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise InputError(f"{where}: {key}[{i}]: expected a mapping")
    return items


def _situation_ids(raw: list[Mapping[str, Any]]) -> list[str]:
    """An explicit ``id``, else the first tag when no other situation starts with it, else its position."""
    firsts = [str((r.get("tags") or [""])[0]) if isinstance(r.get("tags"), list) else "" for r in raw]
    ids = []
    for k, (r, first) in enumerate(zip(raw, firsts, strict=True)):
        if r.get("id"):
            ids.append(str(r["id"]))
        elif first and firsts.count(first) == 1:
            ids.append(first)
        else:
            ids.append(f"situation-{k + 1}")
    return ids


def load_settings(path: str | Path, any_greeting: bool = False) -> Settings:
    """Every language's cards and situations; the first problem is one InputError naming where it is.
    ``any_greeting``: a card of PingPong's layout gets its greeting from any spelling, not only PingPong's."""
    data = parse_json_or_yaml(path, "a PingPong settings file")
    if not isinstance(data, dict) or not data:
        raise InputError(f"{path}: expected a mapping of language code to its characters and situations")
    cards: dict[str, list[Card]] = {}
    situations: dict[str, list[Situation]] = {}
    unread: list[str] = []
    for lang, block in data.items():
        lang = str(lang)
        where = f"{path}: language '{lang}'"
        if not is_language_code(lang):
            # The interrogator and judges are told the language by name: "xx" would reach them as
            # "Unknown language [xx]".
            raise InputError(f"{where}: not a language code (use one such as en, ru, zh or zh-Hant)")
        if not isinstance(block, dict):
            raise InputError(f"{where}: expected a mapping with 'characters' and 'situations'")
        for key in block:
            if key not in LANGUAGE_KEYS and key not in IGNORED and not str(key).endswith("_prompt_path"):
                raise InputError(f"{where}: unknown field '{key}' (known: characters, situations; "
                                 "version and *_prompt_path are read and ignored)")
        raw_cards = _records(block, "characters", where)
        cards[lang] = []
        for i, rec in enumerate(raw_cards):
            who = f"{where}: character '{rec.get('char_name') or rec.get('name') or f'#{i}'}'"
            if "char_name" in rec and not any_greeting and any(rec.get(k) for k in UNREAD_GREETINGS):
                unread.append(f"{lang}/{rec['char_name']}")
                rec = {k: v for k, v in rec.items() if k not in UNREAD_GREETINGS}
            cards[lang].append(_validated(Card, {**_renamed(rec, CARD_FIELDS, who), "language": lang}, who, rec,
                                          CARD_FIELDS))
        raw_situations = _records(block, "situations", where)
        situations[lang] = []
        for sid, rec in zip(_situation_ids(raw_situations), raw_situations, strict=True):
            who = f"{where}: situation '{sid}'"
            fields = {**_renamed(rec, SITUATION_FIELDS, who), "situation_id": sid, "language": lang}
            situations[lang].append(_validated(Situation, fields, who, rec, SITUATION_FIELDS))
        for what, names in (("character", [c.name for c in cards[lang]]),
                            ("situation", [s.situation_id for s in situations[lang]])):
            dupes = duplicates(names)
            if dupes:
                raise InputError(f"{where}: {what} '{dupes[0]}' appears more than once")
    return Settings(cards, situations, tuple(unread))


def conversation_id(card: Card, situation: Situation) -> str:
    """A conversation's key, as PingPong resumes by (character, situation), within a language."""
    return f"{card.language}/{card.name}/{situation.situation_id}"
