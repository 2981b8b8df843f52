"""Cutting a reply that loops, as CoSER's agents do to the replies of every model that is not a GPT or a Claude.

CoSER (``utils.fix_repeation``) cuts a reply at its first repetition and gives back what comes before it: a run of
100 or more Latin letters is shortened to its first 20; then the reply, as a sequence of tokens (words, single CJK
and kana characters, digits, punctuation and symbols), is cut where a stretch of 5 to 30 tokens repeats itself
four more times back to back, or, failing that, where a stretch of 15 to 30 tokens comes back after it ended; the
tokens kept are joined again (a space between two words, none next to CJK), and a full stop added after a final
letter or digit (。 after a final CJK or kana character). A reply with nothing of the sort stays as it is.
"""

from __future__ import annotations

import re
import string

import regex

_TOKENS = regex.compile(r"\b\w+\b|[\u4e00-\u9fff]|[\u3040-\u309F\u30A0-\u30FF]|\d|[\p{P}\p{S}]")
_CJK_START = re.compile(r"[\u4e00-\u9fff]|[\u3040-\u309F\u30A0-\u30FF]")
_LONG_LETTERS = re.compile(r"[a-zA-Z]{100,}")


def tokens(text: str) -> list[str]:
    """The reply's tokens; a token starting with a CJK or kana character stands for its characters, one each."""
    out: list[str] = []
    for token in _TOKENS.findall(text):
        out.extend(token if _CJK_START.match(token) else [token])
    return out


def _looping_run(toks: list[str], shortest: int = 5, longest: int = 30, copies: int = 5) -> int | None:
    """Where the first stretch that repeats back to back (``copies`` times in all) ends, trying short stretches
    first; None if none does."""
    n = len(toks)
    for size in range(shortest, min(longest, n) + 1):
        for start in range(n - size + 1):
            piece = toks[start:start + size]
            if all(toks[start + k * size:start + (k + 1) * size] == piece for k in range(1, copies)):
                return start + size
    return None


def _returning_stretch(toks: list[str], shortest: int = 15, longest: int = 30) -> int | None:
    """The earliest place where a stretch of ``shortest`` to ``longest`` tokens comes back, not overlapping its
    first appearance; None if none does."""
    n, earliest = len(toks), None
    for size in range(shortest, min(longest, n) + 1):
        first: dict[tuple[str, ...], int] = {}
        for start in range(n - size + 1):
            piece = tuple(toks[start:start + size])
            if piece in first:
                if start - first[piece] >= size:
                    earliest = start if earliest is None else min(earliest, start)
            else:
                first[piece] = start
    return earliest


def _joined(toks: list[str]) -> str:
    text, before = "", None
    for token in toks:
        kind = "P" if token in string.punctuation else "CJK" if _CJK_START.match(token) else "word"
        text += f" {token}" if before in ("word", "P") and kind == "word" else token
        before = kind
    if re.match(r"[a-zA-Z0-9]+$", text[-1]):
        text += "."
    elif _CJK_START.match(text[-1]):
        text += "。"
    return text


def cut_repetition(reply: str) -> str | None:
    """The reply cut at its first repetition, or None when it has none (then it stays as it is)."""
    changed = False
    for run in _LONG_LETTERS.findall(reply):
        reply, changed = reply.replace(run, run[:20]), True
    toks = tokens(reply)
    end = _looping_run(toks)
    if end is None:
        end = _returning_stretch(toks)
    if end is not None:
        return _joined(toks[:end])
    return reply if changed else None
