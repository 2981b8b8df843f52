"""Role profiles: a description with catchphrases, and a script parsed into dialogue rounds that end with the
role's own line.

Two layouts are read:
- rpbench's role file (YAML or JSON): ``name``, ``language``, ``description``, optional ``catchphrases``,
  ``script_name``, ``aliases`` (how the script names the role), and the script as text (``script``: one
  ``SPEAKER: line`` per line; a line without a speaker, or in brackets, is narration; a line starting with
  ``ACT`` or ``SCENE`` starts a new act) or as ``turns`` (``role``, ``content``, optional ``act_id``);
- RoleBench's released profiles: ``desc.json`` (role name -> description with catchphrases) beside
  ``profiles-eng-<role>.jsonl`` / ``profiles-zh-<role>.jsonl`` (``act_id``, ``diag_id``, ``role``, ``content``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from rpbench.storage.user_files import parse_json_or_yaml, read_user_text
from rpbench.tasks.core.errors import InputError, first_error
from rpbench.tasks.modes.rolellm.records import RoleProfile, ScriptTurn
from rpbench.tasks.stats.similarity import has_cjk

MIN_ROLE_TURNS = 25  # RoleLLM keeps roles with at least this many turns of their own
ROLE_FILE_FIELDS = {"name", "language", "description", "catchphrases", "script_name", "aliases", "script", "turns"}
_SPEAKER = re.compile(r"^\s*([^\s:：(（\[][^:：]{0,40}?)\s*[:：]\s*(.+)$")
_ACT = re.compile(r"^\s*(ACT|SCENE|第.{1,4}[幕场])\b", re.IGNORECASE)


@dataclass(frozen=True)
class Pair:
    """One dialogue round as a retrieval example: what was said to the role, and the role's reply."""

    question: str
    answer: str


def parse_script(text: str, role: str, aliases: Sequence[str] = ()) -> list[ScriptTurn]:
    """Turns from ``SPEAKER: line`` text; lines of the role (or its aliases, any case) are spoken as ``role``.

    A round (``diag_id``) runs up to and including each line of the role.
    """
    names = {n.casefold() for n in (role, *aliases)}
    turns: list[ScriptTurn] = []
    act, diag = 0, 0
    for line in text.splitlines():
        if not line.strip():
            continue
        if _ACT.match(line):
            act += 1
            continue
        m = _SPEAKER.match(line)
        bracketed = line.strip()[:1] in "([（【"
        if m and not bracketed:
            speaker, content = m.group(1).strip(), m.group(2).strip()
            speaker = role if speaker.casefold() in names else speaker
        else:
            speaker, content = "narrator", line.strip()
        turns.append(ScriptTurn(act_id=act, diag_id=diag, role=speaker, content=content))
        if speaker == role:
            diag += 1
    return turns


def with_rounds(turns: Sequence[Mapping[str, Any]], role: str) -> list[ScriptTurn]:
    """Turns given as a list (no ``diag_id``): numbered into rounds that end with the role's line."""
    out, diag = [], 0
    for t in turns:
        out.append(ScriptTurn(act_id=int(t.get("act_id", 0)), diag_id=diag, role=str(t["role"]),
                              content=str(t["content"])))
        if t["role"] == role:
            diag += 1
    return out


def pairs(profile: RoleProfile) -> list[Pair]:
    """Every complete round as (the lines before the role's reply, the reply); rounds where nobody spoke to the
    role first are left out."""
    rounds: dict[tuple[int, int], list[ScriptTurn]] = {}
    for t in profile.turns:
        rounds.setdefault((t.act_id, t.diag_id), []).append(t)
    out = []
    for turns in rounds.values():
        if turns[-1].role != profile.name or len(turns) < 2:
            continue
        before = "\n".join(f"{t.role}: {t.content}" for t in turns[:-1])
        out.append(Pair(before, turns[-1].content))
    return out


def role_turns(profile: RoleProfile) -> int:
    return sum(t.role == profile.name for t in profile.turns)


def description_with_catchphrases(description: str, catchphrases: Sequence[str], language: str) -> str:
    if not catchphrases:
        return description
    quoted = " / ".join(f"“{c}”" for c in catchphrases)
    return f"{description} 你的口头禅是：{quoted}" if language == "zh" else f"{description} Your catchphrases: {quoted}"


def load_role_file(path: str | Path) -> RoleProfile:
    """An rpbench role file, or an error naming the file and the field."""
    data = parse_json_or_yaml(path, "a role file")
    if not isinstance(data, Mapping):
        raise InputError(f"{path}: expected a role (name, language, description, script)")
    unknown = sorted(set(data) - ROLE_FILE_FIELDS)
    if unknown:
        raise InputError(f"{path}: unknown field '{unknown[0]}' (known: {', '.join(sorted(ROLE_FILE_FIELDS))})")
    name = str(data.get("name") or "")
    if "script" in data and "turns" in data:
        raise InputError(f"{path}: give the script as 'script' (text) or as 'turns', not both")
    try:
        if "turns" in data:
            raw = data["turns"]
            if not isinstance(raw, list) or not all(isinstance(t, Mapping) and {"role", "content"} <= set(t)
                                                    for t in raw):
                raise InputError(f"{path}: field 'turns': expected a list of {{role, content}}")
            turns = with_rounds(raw, name)
        else:
            turns = parse_script(str(data.get("script") or ""), name, [str(a) for a in data.get("aliases") or []])
        language = data.get("language")
        return RoleProfile.model_validate({
            "name": name, "language": language, "script_name": str(data.get("script_name") or ""),
            "description": description_with_catchphrases(str(data.get("description") or ""),
                                                         list(data.get("catchphrases") or []), str(language)),
            "catchphrases": list(data.get("catchphrases") or []), "turns": turns})
    except ValidationError as exc:
        field, msg = first_error(exc)
        raise InputError(f"{path}: field '{field}': {msg}") from None


def _released_turns(path: Path) -> list[ScriptTurn]:
    out = []
    for n, line in enumerate(read_user_text(path, "a RoleBench profile", 256 * 2**20).splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(ScriptTurn.model_validate_json(line))
        except ValidationError as exc:
            field, msg = first_error(exc)
            raise InputError(f"{path}: line {n}: field '{field}': {msg}") from None
    return out


def load_released(folder: Path) -> dict[str, RoleProfile]:
    """RoleBench's ``desc.json`` with each role's ``profiles-<lang>-<role>.jsonl`` beside it, if there is one."""
    desc_path = folder / "desc.json"
    try:
        desc = json.loads(read_user_text(desc_path, "RoleBench's desc.json"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{desc_path}: not JSON ({exc.msg})") from None
    if not isinstance(desc, Mapping):
        raise InputError(f"{desc_path}: expected an object of role names to descriptions")
    out = {}
    for role, text in desc.items():
        language: Literal["en", "zh"] = "zh" if "zh" in folder.name or has_cjk(str(text)) else "en"
        found = [p for p in folder.glob(f"profiles-*-{role}.jsonl")]
        out[role] = RoleProfile(name=role, language=language, description=str(text),
                                turns=_released_turns(found[0]) if found else [])
    return out


def profile_files(paths: Sequence[str]) -> list[str]:
    """The files ``paths`` stand for: role files as given; in a folder, its role files (``*.yaml``, ``*.yml``)
    and every RoleBench ``desc.json`` below it."""
    out: list[str] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted([*p.glob("*.yaml"), *p.glob("*.yml"), *p.rglob("desc.json")])
            if not found:
                raise InputError(f"{p}: no role files (*.yaml) and no RoleBench desc.json")
            out += [str(f) for f in found]
        elif p.exists():
            out.append(str(p))
        else:
            raise InputError(f"{p}: no such file or folder")
    # The scripts beside each desc.json are read with it: listed, so that a changed script counts as a change.
    scripts = [str(s) for f in out if Path(f).name == "desc.json"
               for s in sorted(Path(f).parent.glob("profiles-*.jsonl"))]
    return [*out, *scripts]


def discover_profiles(data: Sequence[str]) -> list[str]:
    """RoleBench's profile folders (``profiles-*/desc.json``) in a data folder or above a data file, as the
    released layout puts them beside ``rolebench-eng`` and ``rolebench-zh``."""
    found: set[Path] = set()
    for p in map(Path, data):
        for folder in (p, *p.resolve().parents) if p.is_dir() else p.resolve().parents:
            hits = sorted(folder.glob("profiles-*/desc.json"))
            if hits:
                found.update(hits)
                break
    return profile_files([str(f) for f in sorted(found)])


def load_profiles(files: Sequence[str]) -> dict[str, RoleProfile]:
    """Profiles by role name from role files and RoleBench ``desc.json`` files (with the role scripts beside
    them); a role defined twice is an error."""
    out: dict[str, RoleProfile] = {}
    for f in map(Path, files):
        if f.suffix == ".jsonl":
            continue  # a role's script, read with its desc.json
        found = load_released(f.parent).values() if f.name == "desc.json" else [load_role_file(f)]
        for profile in found:
            if profile.name in out:
                raise InputError(f"{f}: role '{profile.name}' is defined twice")
            out[profile.name] = profile
    return out


def filter_roles(profiles: Mapping[str, RoleProfile], min_turns: int) -> tuple[dict[str, RoleProfile], list[str]]:
    """The roles with at least ``min_turns`` turns of their own, and the names of those left out."""
    kept = {n: p for n, p in profiles.items() if role_turns(p) >= min_turns}
    return kept, sorted(set(profiles) - set(kept))
