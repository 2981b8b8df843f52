"""CoSER's scores, as its release computes them (``gca_evaluation/main.py``, ``gca_judging``).

- A dimension's score is a deduction corrected for length: ``100 - 5 * (sum of the flaws' severities - 0.3 *
  the actor turns)``, kept within 0 and 100. The critic answers in CoSER's layout held to a schema (a whole
  number for every severity, which CoSER's sum requires: it counts integers only). The actor turns are the
  scene's messages that are not the Environment's (next-speaker entries are no messages).
- A circumstance's score is the mean of its four dimensions; a model's is the mean of the four dimension means.
- BLEU and ROUGE-L compare the scene with the original conversation, thoughts removed, from the
  ``--continue-from`` round on. BLEU: NLTK's ``sentence_bleu`` (four-gram, uniform weights, no smoothing) on
  lower-cased tokens of NLTK's Treebank-style word tokenizer. CoSER's ``word_tokenize`` first splits sentences
  with the Punkt model, a data file NLTK downloads and rpbench cannot (it runs offline), so a token at a
  sentence's end may differ. ROUGE-L: rouge-score's F-measure (its own tokenizer, no stemming); CoSER used the
  ``rouge`` package, whose tokens differ too. The report states both; the released values are printed beside
  ours in ``tests/test_coser.py``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

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


def overlap(original: Sequence[Line], turns: Sequence[Message], skip: int) -> tuple[float, float]:
    """(BLEU, ROUGE-L) of the scene against the original conversation, both from round ``skip`` on."""
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.translate.bleu_score import sentence_bleu
    from rouge_score import rouge_scorer

    made, wanted = scene_text(turns[skip:]), original_text(original[skip:])
    tokenizer = NLTKWordTokenizer()
    reference = [t for line in wanted.lower().split("\n") for t in tokenizer.tokenize(line)]
    candidate = [t for line in made.lower().split("\n") for t in tokenizer.tokenize(line)]
    with warnings.catch_warnings():  # NLTK warns of a zero n-gram count; a zero BLEU says it already
        warnings.simplefilter("ignore")
        bleu = float(sentence_bleu([reference], candidate)) if reference and candidate else 0.0
    rouge = rouge_scorer.RougeScorer(["rougeL"]).score(wanted, made)["rougeL"].fmeasure
    return bleu, float(rouge)
