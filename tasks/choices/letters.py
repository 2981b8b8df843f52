"""Reading the option letters a reply chooses, whatever text surrounds them: by a named policy (``reader``), or
by a pattern a release states (``pattern_reader``).

``lenient`` (``option_letters``), rpbench's reader: models answer "B", "答案：C。", "**(D)**", "I'd pick A and C", "A is
correct" or "A good choice is D". The letters are taken, in order of first appearance and each once, from (1) an
explicit answer phrase ("the answer is", "I choose", "选择", "答案") if the reply has one; else (2) every letter A-H
standing on its own: not inside a word, with punctuation, spaces, Chinese text or another option letter around it,
and not the English article "A" before a word ("A is", "A and", "A or" are letters, "A good" is the article). A
phrase or letter right after a negation ("I would not choose A", "not A", "neither A nor B", "不选A") is turned down,
not chosen. Full-width letters count as letters. Only letters that are options of the item count. If no letter is
found, a reply that quotes exactly one option's text (the longest quoted one wins where one option's text contains
another's, "non-neutral" over "neutral") chooses that option. Nothing found is nothing chosen: the caller records
the answer as unreadable, never as an option.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping

from rpbench.tasks.core.errors import unknown_name

# A reader: the letters a reply chooses, in order, each once, among the options (letter -> text, or the letters).
Reader = Callable[[str, Mapping[str, str] | str], list[str]]

_CJK = "\u4e00-\u9fff"
_LETTER_LIST = r"([A-H](?:\s*(?:[,，、/&和与及]|and|or|以及)?\s*[A-H](?![A-Za-z]))*)(?![A-Za-z])"
_PHRASE = re.compile(
    r"(?i:answers?|choices?|options?|selections?|(?:i\s+)?(?:would\s+)?(?:choose|pick|select)|my\s+pick"
    r"|go(?:ing)?\s+with|答案|选择|选项|我选|应选|选)"
    r"\s*(?i:is|are|would\s+be|:|：|为|是|应该是|应为)?\s*[(\[（【\"'“]*\s*" + _LETTER_LIST)
_BRACKETED_LOWER = re.compile(r"[(\[（【]([a-h])[)\]）】]")  # "(b)": a lower-case letter only in brackets
_STANDALONE = re.compile(rf"(?:(?<=^)|(?<=[^A-Za-z0-9_])|(?<=[{_CJK}])|(?<=[A-H]))([A-H])"
                         rf"(?=$|[^A-Za-z0-9_]|[{_CJK}]|[A-H](?![a-z]))")
# "A" before a lower-case word is the English article ("A good choice is D")... unless the word shows "A" is the
# subject of an answer or one of a list: "A is correct", "A and C", "A or C", "A fits her best".
_ARTICLE = re.compile(r"A\s+(?!(?:is|was|seems|would|could|should|must|might|fits|matches|and|or|because|since"
                      r"|best|looks|sounds|feels|describes|reflects|captures|shows|applies|makes)\b)[a-z]")
# A letter (or an answer phrase) just after a negation is one the reply turns down: "I would not choose A",
# "not A", "neither A nor B", "不选A", "不是A".
_NEGATION = re.compile(r"(?:\bnot|n't|\bnever|\bneither|\bnor|\bexcept|\brather\s+than|\binstead\s+of"
                       r"|\brule\s+out|\beliminate)\s*(?:choose|pick|select|option|answer)?\s*[(\[\"'“]?\s*$"
                       r"|(?:[不非别]|排除)\s*(?:选|是|选择)?\s*[(\[（]?\s*$", re.IGNORECASE)


def _negated(text: str, start: int) -> bool:
    return bool(_NEGATION.search(text[max(0, start - 24):start]))


def _normalise(reply: str) -> str:
    # Full-width Ａ-Ｈ and （）to ASCII; emphasis marks out of the way.
    return unicodedata.normalize("NFKC", reply).replace("*", " ").replace("_", " ")


def _dedupe(letters: list[str], allowed: str) -> list[str]:
    out: list[str] = []
    for letter in letters:
        letter = letter.upper()
        if letter in allowed and letter not in out:
            out.append(letter)
    return out


def option_letters(reply: str, options: Mapping[str, str] | str = "ABCDEFGH") -> list[str]:
    """The options ``reply`` chooses, in order, each once; ``options`` maps letters to option text (or is just
    the letters allowed)."""
    allowed = "".join(options) if not isinstance(options, str) else options
    text = _normalise(reply)
    phrased: list[str] = []
    for m in _PHRASE.finditer(text):
        if not _negated(text, m.start()):
            phrased += re.findall(r"(?<![A-Za-z])[A-H](?![A-Za-z])", m.group(1))
    found = _dedupe(phrased or _BRACKETED_LOWER.findall(text), allowed)
    if found:
        return found
    standalone = [m.group(1) for m in _STANDALONE.finditer(text)
                  if not (m.group(1) == "A" and _ARTICLE.match(text, m.start())) and not _negated(text, m.start())]
    found = _dedupe(standalone, allowed)
    if found or isinstance(options, str):
        return found
    return _quoted_option(text, options)


def _quoted_option(text: str, options: Mapping[str, str]) -> list[str]:
    rest = text.lower()
    hits = []
    for letter, option in sorted(options.items(), key=lambda kv: -len(kv[1])):
        needle = _normalise(option).strip().lower()
        if len(needle) >= 2 and needle in rest:
            hits.append(letter)
            rest = rest.replace(needle, " ")
    return hits if len(hits) == 1 else []


def pattern_reader(pattern: re.Pattern[str], group: int | None = None) -> Reader:
    """A reader that takes every letter ``pattern`` finds, in order, each once (a released scorer's own regular
    expression, its ``group``-th group where it has several), whether or not the item offers it: a release's
    reader is followed as it is, including what it gets wrong."""
    def read(reply: str, _options: Mapping[str, str] | str = "") -> list[str]:
        out: list[str] = []
        for match in pattern.findall(reply):
            letter = match[group if group is not None else 0] if isinstance(match, tuple) else match
            if letter and letter not in out:
                out.append(letter)
        return out
    return read


READERS: dict[str, Reader] = {"lenient": option_letters}


def reader(name: str) -> Reader:
    """The reader a policy names (``lenient``), or an error listing those there are."""
    if name not in READERS:
        raise unknown_name("letter reader", name, READERS)
    return READERS[name]


def score_letters(chosen: list[str], gold: list[str], rule: str = "every") -> float:
    """1.0 or 0.0: ``every`` (the chosen letters are exactly the gold ones) or ``first`` (the first letter chosen
    is a gold one). Nothing chosen scores 0 here: a caller that skips unreadable answers checks first."""
    if rule == "every":
        return float(bool(chosen) and set(chosen) == set(gold))
    if rule == "first":
        return float(bool(chosen) and chosen[0] in gold)
    raise unknown_name("letter rule", rule, ("every", "first"))
