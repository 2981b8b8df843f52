"""The plot-aware pass: move an unfinished ending of a chunk to the start of the next.

Each boundary is judged on its own (the tail of one chunk, the head of the
next), so all boundaries of a book are asked at once. The model copies the
first words of the part that should move; they are located in the tail
exactly or, failing that, by fuzzy alignment, and the cut is snapped back to
the start of that line. Text only moves, so the chunks still join to the book.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz import fuzz

from rpbench import prompts
from rpbench.tasks.llm import CallResult, Request
from rpbench.tasks.modes.furina.pool.ingest import Book
from rpbench.tasks.modes.furina.pool.models import BoundaryVerdict

TAIL_CHARS = 1500
HEAD_CHARS = 500
MIN_MATCH_SCORE = 80.0
MAX_MOVE_FRACTION = 0.5


@dataclass(frozen=True)
class BoundaryMove:
    boundary: int  # between chunk `boundary` and `boundary + 1`
    status: str  # moved | kept | not_found | too_far | failed
    old_end: int
    new_end: int


def boundary_requests(book: Book, spans: list[tuple[int, int]]) -> list[Request[BoundaryVerdict]]:
    out: list[Request[BoundaryVerdict]] = []
    for i in range(len(spans) - 1):
        (s, e), (s2, e2) = spans[i], spans[i + 1]
        tail = book.text[max(s, e - TAIL_CHARS) : e]
        head = book.text[s2 : min(e2, s2 + HEAD_CHARS)]
        text = prompts.render("furina/pool/boundary", book.language, tail=tail, head=head).text
        out.append(
            Request("extractor", [{"role": "user", "content": text}], schema=BoundaryVerdict,
                    tag=f"boundary:{book.book_id}:{i}")
        )
    return out


def locate(text: str, phrase: str, lo: int, hi: int) -> int | None:
    """Where ``phrase`` starts in text[lo:hi]: exactly if possible, else by fuzzy alignment."""
    phrase = phrase.strip().strip('"“”')
    if not phrase:
        return None
    pos = text.find(phrase, lo, hi)
    if pos >= 0:
        return pos
    window = text[lo:hi]
    aligned = fuzz.partial_ratio_alignment(phrase, window)
    if aligned is None or aligned.score < MIN_MATCH_SCORE:
        return None
    return lo + aligned.dest_start


def apply_boundaries(
    text: str, spans: list[tuple[int, int]], verdicts: list[CallResult[BoundaryVerdict]]
) -> tuple[list[tuple[int, int]], list[BoundaryMove]]:
    """New spans after the moves, and what happened at each boundary."""
    ends = [e for _, e in spans]
    moves = []
    for i, verdict in enumerate(verdicts):
        s, e = spans[i]
        if not verdict.ok:
            moves.append(BoundaryMove(i, "failed", e, e))
            continue
        v = verdict.parsed
        if not v.unfinished:
            moves.append(BoundaryMove(i, "kept", e, e))
            continue
        lo = max(s, e - TAIL_CHARS)
        pos = locate(text, v.unfinished_starts_with, lo, e)
        if pos is None:
            moves.append(BoundaryMove(i, "not_found", e, e))
            continue
        line_start = text.rfind("\n", lo, pos) + 1 or lo
        cut = max(line_start, lo)
        if cut <= s + (1 - MAX_MOVE_FRACTION) * (e - s):
            moves.append(BoundaryMove(i, "too_far", e, e))
            continue
        ends[i] = cut
        moves.append(BoundaryMove(i, "moved", e, cut))
    starts = [spans[0][0], *ends[:-1]]
    return list(zip(starts, ends, strict=True)), moves
