"""Rouge-L as RoleLLM reports it (F-measure x100), computed by rouge-score.

English text goes through rouge-score's own tokenizer, so numbers match anyone else's rouge-score. Chinese has
no spaces and rouge-score's tokenizer drops everything outside a-z and 0-9, so Chinese text is scored with
one token per character (``tasks.stats.similarity.tokens``). With several references (RoleBench's general rows
have up to five), ``max`` keeps the best match, the usual multi-reference rule; ``first`` scores against the
first reference only, as OpenCompass does.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from rpbench.tasks.stats.similarity import tokens

Combine = Literal["max", "first"]


class _CharTokenizer:
    def tokenize(self, text: str) -> list[str]:
        return tokens(text)


if TYPE_CHECKING:
    from rouge_score.rouge_scorer import RougeScorer


@functools.cache
def _scorer(language: str) -> RougeScorer:
    # rouge-score brings nltk and scipy (about a second): loaded when the first answer is scored.
    from rouge_score import rouge_scorer

    if language == "zh":
        return rouge_scorer.RougeScorer(["rougeL"], tokenizer=_CharTokenizer())
    return rouge_scorer.RougeScorer(["rougeL"])


def rouge_l(prediction: str, references: Sequence[str], language: str, combine: Combine = "max") -> float:
    """Rouge-L F-measure (x100) of ``prediction`` against ``references`` (combined by ``combine``)."""
    if not references:
        raise ValueError("Rouge-L needs at least one reference")
    scorer = _scorer("zh" if language == "zh" else "en")
    refs = references[:1] if combine == "first" else references
    return 100.0 * max(scorer.score(ref, prediction)["rougeL"].fmeasure for ref in refs)
