"""Static chunking: chapters by heading, merged or split to a token budget.

CoSER's sizes by default: chapters accumulate until a chunk reaches
``min_tokens``; a chunk over ``max_tokens`` is split at paragraph (then
sentence) boundaries into pieces of about ``target_tokens``; with too few
headings the book is cut into windows of about ``target_tokens``. Chunks are
contiguous spans of the cleaned text: joined, they give it back exactly.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from rpbench.tasks.llm.local.tokens import count_tokens
from rpbench.tasks.modes.furina.config import ChunkingConfig
from rpbench.tasks.modes.furina.pool.chapters import find_headings

_PARAGRAPH_END = re.compile(r"\n[ \t]*\n")
# A sentence end: terminal punctuation, an optional closing quote, then spaces; or a line break.
_SENTENCE_END = re.compile(r"[.!?。！？…][\"'”’」』)]?\s*|\n")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    n_tokens: int


def _units(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Paragraph spans covering [start, end) exactly (each paragraph keeps its trailing blank line)."""
    spans, pos = [], start
    for m in _PARAGRAPH_END.finditer(text, start, end):
        spans.append((pos, m.end()))
        pos = m.end()
    if pos < end:
        spans.append((pos, end))
    return spans


def _split_long(text: str, span: tuple[int, int], limit: int, count: int) -> list[tuple[int, int]]:
    """Cut a paragraph longer than ``limit`` tokens at sentence ends (or, failing that, evenly by characters)."""
    start, end = span
    pieces = max(2, -(-count // limit))
    width = (end - start) // pieces
    cuts = [start]
    for k in range(1, pieces):
        want = start + k * width
        m = _SENTENCE_END.search(text, want, min(end, want + width // 2))
        cuts.append(m.end() if m and m.end() < end else want)
    cuts.append(end)
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def _sections(text: str, language: str, cfg: ChunkingConfig) -> list[tuple[int, int]]:
    headings = find_headings(text, language)
    if len(headings) < cfg.min_headings:
        return [(0, len(text))]
    starts = [h.start for h in headings]
    starts[0] = 0  # front matter joins the first chapter
    return list(zip(starts, [*starts[1:], len(text)], strict=True))


def _pack(units: list[tuple[int, int]], counts: list[int], cfg: ChunkingConfig) -> list[tuple[int, int, int]]:
    """Greedily pack consecutive units into pieces of about the target size; a short remainder joins the last."""
    goal = cfg.target_tokens
    pieces, cur_start, cur_tokens = [], units[0][0], 0
    for (a, _), n in zip(units, counts, strict=True):
        if cur_tokens and cur_tokens + n > goal:
            pieces.append((cur_start, a, cur_tokens))
            cur_start, cur_tokens = a, 0
        cur_tokens += n
    pieces.append((cur_start, units[-1][1], cur_tokens))
    return _merge_short_tail(pieces, cfg)


def _merge_short_tail(pieces: list[tuple[int, int, int]], cfg: ChunkingConfig) -> list[tuple[int, int, int]]:
    if len(pieces) > 1 and pieces[-1][2] < cfg.min_tokens and pieces[-1][2] + pieces[-2][2] <= cfg.max_tokens:
        (a, _, n1), (_, b, n2) = pieces[-2], pieces[-1]
        pieces[-2:] = [(a, b, n1 + n2)]
    return pieces


def static_chunks(text: str, language: str, cfg: ChunkingConfig | None = None) -> list[Span]:
    cfg = cfg or ChunkingConfig()
    if not text:
        return []
    # Paragraph units with token counts; any paragraph over the target is cut at sentence ends.
    units: list[tuple[int, int]] = []
    section_of: list[int] = []
    for si, (s, e) in enumerate(_sections(text, language, cfg)):
        for u in _units(text, s, e):
            units.append(u)
            section_of.append(si)
    counts = count_tokens([text[a:b] for a, b in units])
    fine_units, fine_counts, fine_sections = [], [], []
    for u, n, si in zip(units, counts, section_of, strict=True):
        parts = [u] if n <= cfg.target_tokens else _split_long(text, u, cfg.target_tokens, n)
        part_counts = [n] if len(parts) == 1 else count_tokens([text[a:b] for a, b in parts])
        fine_units += parts
        fine_counts += part_counts
        fine_sections += [si] * len(parts)

    # Sections (chapters) accumulate until a chunk reaches min_tokens.
    groups: list[list[int]] = [[]]
    group_tokens = 0
    for i, n in enumerate(fine_counts):
        new_section = i > 0 and fine_sections[i] != fine_sections[i - 1]
        if new_section and group_tokens >= cfg.min_tokens:
            groups.append([])
            group_tokens = 0
        groups[-1].append(i)
        group_tokens += n
    spans: list[tuple[int, int, int]] = []
    for g in groups:
        g_units = [fine_units[i] for i in g]
        g_counts = [fine_counts[i] for i in g]
        total = sum(g_counts)
        if total <= cfg.max_tokens:
            spans.append((g_units[0][0], g_units[-1][1], total))
        else:
            spans += _pack(g_units, g_counts, cfg)
    # A short last chunk joins the one before when the two still fit.
    spans = _merge_short_tail(spans, cfg)
    exact = count_tokens([text[a:b] for a, b, _ in spans])
    return [Span(a, b, n) for (a, b, _), n in zip(spans, exact, strict=True)]
