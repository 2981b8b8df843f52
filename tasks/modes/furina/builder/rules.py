"""Rule checks on a test utterance (FURINA appendix G). They flag for review; they never drop."""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
REFUSALS = (
    "as an ai", "i'm an ai", "i am an ai", "language model", "i cannot role", "i can't role", "i'm sorry, but i can",
    "作为一个ai", "作为人工智能", "我是一个语言模型", "我无法扮演",
)
_BRACKETS = {"(": ")", "（": "）", "[": "]", "【": "】", "「": "」", "“": "”"}


def _balanced(text: str) -> bool:
    stack: list[str] = []
    closers = {v: k for k, v in _BRACKETS.items()}
    for ch in text:
        if ch in _BRACKETS:
            stack.append(ch)
        elif ch in closers and (not stack or stack.pop() != closers[ch]):
            return False
    return not stack


def rule_flags(text: str, speaker: str, names: list[str], language: str, earlier: list[str]) -> list[str]:
    """Every problem found in ``text``, as short flag names."""
    flags = []
    stripped = text.strip()
    if not stripped:
        return ["empty"]
    first_line = stripped.splitlines()[0]
    if re.match(rf"^\s*[\[(（]?\s*{re.escape(speaker)}\s*[\])）]?\s*[:：]", first_line):
        flags.append("speaker_prefix")
    others = [n for n in names if n != speaker]
    if any(re.search(rf"(^|\n)\s*{re.escape(n)}\s*[:：]", stripped) for n in others):
        flags.append("several_speakers")
    cjk, latin = len(_CJK.findall(stripped)), len(_LATIN_WORD.findall(stripped))
    if (language == "zh" and latin > cjk) or (language == "en" and cjk > latin):
        flags.append("wrong_language")
    lowered = stripped.lower()
    if any(r in lowered for r in REFUSALS):
        flags.append("refusal")
    if not _balanced(stripped):
        flags.append("unbalanced_brackets")
    if any(" ".join(stripped.split()) == " ".join(e.split()) for e in earlier):
        flags.append("repeats_earlier_line")
    return flags
