"""Chapter headings found by regular expressions, English and Chinese.

A heading is a short line of its own. English: Chapter/CHAPTER/Book/Part with
arabic or roman numerals or number words (optionally followed by a title),
Prologue/Epilogue and similar, and bare roman numerals followed by a title.
Chinese: 第…回/章/节/卷/部/集 with Chinese or arabic numerals, 序章/楔子/尾声, and
numbered headings such as "一、标题".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    "seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|first|second|"
    "third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|last"
)
_NUMBER = rf"(?:\d+|[IVXLCDM]+|(?:{_NUMBER_WORDS})(?:[ \t-]+(?:{_NUMBER_WORDS}))*)"
_EN_HEADINGS = [
    # Chapter 1 / CHAPTER I. Title / Book Two: Title / Part III
    rf"(?:chapter|book|part|volume|canto|letter)[ \t]+{_NUMBER}\b[.:\-\u2014]?(?:[ \t]+\S.*)?",

    # A bare roman numeral with a title: "IV. The Lobster Quadrille"
    r"[IVXLC]+\.[ \t]+[A-Z\u2018\u201c'\"].*",
    # Capitalised only, so a sentence that starts with "introduction" is not taken for a heading.
    r"(?:Prologue|PROLOGUE|Epilogue|EPILOGUE|Preface|PREFACE|Introduction|INTRODUCTION|Afterword|AFTERWORD"
    r"|Interlude|INTERLUDE|Foreword|FOREWORD)\b[.:]?(?:[ \t]+\S.*)?",
]
_ZH_NUM = r"[零〇一二三四五六七八九十百千两\d]+"
_ZH_HEADINGS = [
    rf"第{_ZH_NUM}[回章节卷部集篇幕](?:[ \t:：、，,.]*\S.*)?",
    r"(?:序章|序言|楔子|引子|尾声|后记|番外)(?:[ \t:：]*\S.*)?",
    rf"{_ZH_NUM}[、．.][ \t]*\S.*",
]
MAX_HEADING_CHARS = 60


@dataclass(frozen=True)
class Heading:
    start: int
    title: str


def _compile(patterns: list[str], flags: int) -> re.Pattern[str]:
    return re.compile(r"^[ \t#*]*(?:" + "|".join(patterns) + r")[ \t]*$", flags | re.MULTILINE)


_EN = _compile(_EN_HEADINGS[:1], re.IGNORECASE)
_EN_ROMAN_TITLE = _compile(_EN_HEADINGS[1:], 0)
_ZH = _compile(_ZH_HEADINGS, 0)


def find_headings(text: str, language: str) -> list[Heading]:
    """Headings in order of position; at most one per line, none longer than MAX_HEADING_CHARS."""
    patterns = [_ZH] if language == "zh" else [_EN, _EN_ROMAN_TITLE]
    found: dict[int, Heading] = {}
    for pattern in patterns:
        for m in pattern.finditer(text):
            line = m.group(0).strip()
            if 0 < len(line) <= MAX_HEADING_CHARS and m.start() not in found:
                found[m.start()] = Heading(m.start(), line.strip("#* \t"))
    headings = [found[k] for k in sorted(found)]
    return _drop_table_of_contents(headings, text)


def _drop_table_of_contents(headings: list[Heading], text: str) -> list[Heading]:
    """A contents page lists every heading on consecutive lines: keep only headings followed by real text."""
    kept = []
    for i, h in enumerate(headings):
        end = headings[i + 1].start if i + 1 < len(headings) else len(text)
        body = text[h.start:end].split("\n", 1)
        if len(body) > 1 and len(body[1].strip()) >= 200:
            kept.append(h)
    return kept
