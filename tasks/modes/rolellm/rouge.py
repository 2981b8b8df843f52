"""Rouge-L (F-measure x100) as RoleLLM's authors score RoleBench, through their OpenCompass integration.

- English: rouge-score's own tokenizer, no stemming (OpenCompass's RougeEvaluator runs rouge-score through
  Hugging Face's rouge metric).
- Chinese (``zh="jieba"``, OpenCompass's JiebaRougeEvaluator): each text first cut at its first newline, ASCII
  period or ASCII comma, stripped of punctuation and of the English articles, its spaces folded
  (OpenCompass's ``general_postprocess``, in our words below); then cut into words by jieba and scored by the
  rouge-chinese package. ``zh="chars"`` is rpbench's own: one token per character, nothing cut or dropped, through
  rouge-score (its tokenizer keeps only a-z and 0-9, so a Chinese text would otherwise score empty).
- References: ``combine="first"`` scores against the first reference only, as OpenCompass does (RoleBench's
  general rows have up to five); ``combine="max"`` keeps the best match, the usual multi-reference rule.

OpenCompass reports the bootstrap median of the English mean (rouge-score's BootstrapAggregator) and the plain
mean of the Chinese; rpbench reports means with its own intervals (``benchmarks/rolellm_released.py`` prints
OpenCompass's English figure beside it).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from rpbench.tasks.stats.similarity import tokens

Combine = Literal["first", "max"]
ChineseTokens = Literal["jieba", "chars"]
# What rouge-chinese is given for a text left empty by the clean-up (it cannot score an empty one): a text that
# matches nothing, as in OpenCompass.
_EMPTY_PREDICTION, _EMPTY_REFERENCE = "__PREDPLACEHOLDER__", "__REFRPLACEHOLDER__"


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


def opencompass_clean(text: str) -> str:
    """OpenCompass's clean-up before jieba: the text up to its first newline, ``.`` or ``,``; every character
    that is neither a word character nor a space dropped; the words a, an, the dropped; spaces folded."""
    head = re.split(r"[\n.,]", text, maxsplit=1)[0]
    head = re.sub(r"[^\w\s]", "", head)
    head = re.sub(r"\b(a|an|the)\b", "", head, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", head).strip()


@functools.cache
def _jieba() -> Any:
    import jieba

    jieba.setLogLevel(logging.WARNING)  # it announces loading its dictionary on the first cut
    return jieba


@functools.cache
def _rouge_chinese() -> Any:
    from rouge_chinese import Rouge

    return Rouge()


def _jieba_rouge_l(prediction: str, reference: str) -> float:
    jieba = _jieba()
    pred = " ".join(jieba.cut(opencompass_clean(prediction))) or _EMPTY_PREDICTION
    ref = " ".join(jieba.cut(opencompass_clean(reference))) or _EMPTY_REFERENCE
    return float(_rouge_chinese().get_scores(pred, ref)[0]["rouge-l"]["f"])


def rouge_l(prediction: str, references: Sequence[str], language: str, combine: Combine = "first",
            zh: ChineseTokens = "jieba") -> float:
    """Rouge-L F-measure (x100) of ``prediction`` against ``references`` (combined by ``combine``)."""
    if not references:
        raise ValueError("Rouge-L needs at least one reference")
    refs = references[:1] if combine == "first" else references
    if language == "zh" and zh == "jieba":
        return 100.0 * max(_jieba_rouge_l(prediction, ref) for ref in refs)
    scorer = _scorer("zh" if language == "zh" else "en")
    return 100.0 * max(scorer.score(ref, prediction)["rougeL"].fmeasure for ref in refs)
