"""Lexical similarity shared by modes: one tokenisation for English and Chinese, and a BM25 index (rank-bm25)
that retrieves the nearest texts and says how close a text comes to copying one."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rank_bm25 import BM25Plus

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W_]+", re.UNICODE)


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def tokens(text: str) -> list[str]:
    """Lower-cased words; each Chinese character a token of its own (Chinese has no spaces to split on)."""
    return [t.lower() for t in _WORD.findall(text)]


class BM25Index:
    """BM25+ over a fixed list of texts: its idf stays positive, so a term shared by half of a small corpus still
    counts. With ``floor`` every query term also adds a little to every text, which suits ranking long texts;
    without it a text scores only by the terms it shares with the query, which suits telling near-copies among
    short ones (questions). Ties go to the earlier text, so results never depend on anything but the corpus."""

    def __init__(self, texts: Sequence[str], floor: bool = True) -> None:
        self.docs = [tokens(t) for t in texts]
        self._bm25 = BM25Plus(self.docs, delta=1.0 if floor else 0.0) if self.docs else None

    def __len__(self) -> int:
        return len(self.docs)

    def scores(self, query: str) -> list[float]:
        if self._bm25 is None:
            return []
        return [float(s) for s in self._bm25.get_scores(tokens(query))]

    def top(self, query: str, k: int) -> list[int]:
        """The indices of the ``k`` texts nearest ``query``, nearest first."""
        scores = self.scores(query)
        return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]

    def self_share(self, query: str, i: int) -> float:
        """How close ``query`` comes to text ``i``: its score against ``i`` over ``i``'s score against itself (near 1
        for a near copy)."""
        ceiling = max(self.scores_of(self.docs[i])[i], 1e-9)
        return self.scores(query)[i] / ceiling

    def scores_of(self, doc: list[str]) -> list[float]:
        return [float(s) for s in self._bm25.get_scores(doc)] if self._bm25 is not None else []
