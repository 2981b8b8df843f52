"""Context-Instruct's segments: a role's script cut into pieces long enough to ask questions about.

RoleLLM's rules: a segment holds whole turns only, at least 500 English words (1,000 Chinese characters) and
at least 4 turns; a turn over 500 words (500 characters) is dropped; a segment over 2,000 words is cut there
(4,000 characters for Chinese, our choice: the paper gives words only); at most 100 segments per role, chosen at
random (seeded) when there are more. Acts and episodes are not boundaries. Segments close at the end of a
round (the role's line), so the role has the last word of each.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from rpbench.tasks.modes.rolellm.records import RoleProfile, ScriptTurn
from rpbench.tasks.stats.similarity import has_cjk


@dataclass(frozen=True)
class Rules:
    min_size_en: int = 500  # words
    min_size_zh: int = 1000  # characters
    max_turn_en: int = 500
    max_turn_zh: int = 500
    max_size_en: int = 2000
    max_size_zh: int = 4000
    min_turns: int = 4
    max_segments: int = 100


def size(text: str, language: str) -> int:
    """Words, or for Chinese the characters that are not spaces."""
    return sum(not c.isspace() for c in text) if language == "zh" else len(text.split())


def _cut(text: str, limit: int, language: str) -> str:
    if language == "zh":
        kept, n = [], 0
        for c in text:
            n += not c.isspace()
            if n > limit:
                break
            kept.append(c)
        return "".join(kept)
    return " ".join(text.split()[:limit])


def segments(profile: RoleProfile, rules: Rules = Rules(), seed: int = 0) -> list[str]:
    """The role's script as segment texts (``speaker: line`` per line), in script order."""
    zh = profile.language == "zh" or has_cjk(profile.description)
    lang = "zh" if zh else "en"
    min_size, max_turn, max_size = ((rules.min_size_zh, rules.max_turn_zh, rules.max_size_zh) if zh
                                    else (rules.min_size_en, rules.max_turn_en, rules.max_size_en))
    out: list[str] = []
    current: list[ScriptTurn] = []
    for turn in profile.turns:
        if size(turn.content, lang) > max_turn:
            continue
        current.append(turn)
        text = _text(current)
        if turn.role == profile.name and len(current) >= rules.min_turns and size(text, lang) >= min_size:
            out.append(_cut(text, max_size, lang) if size(text, lang) > max_size else text)
            current = []
    if len(out) > rules.max_segments:
        keep = sorted(random.Random(seed).sample(range(len(out)), rules.max_segments))
        out = [out[i] for i in keep]
    return out


def _text(turns: Sequence[ScriptTurn]) -> str:
    return "\n".join(f"{t.role}: {t.content}" for t in turns)
