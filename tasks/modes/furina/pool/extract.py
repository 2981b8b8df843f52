"""Scene extraction per chunk, and stitching of scenes cut at a chunk edge."""

from __future__ import annotations

from dataclasses import dataclass, field

from rapidfuzz import fuzz

from rpbench import prompts
from rpbench.tasks.llm import Request
from rpbench.tasks.modes.furina.pool.ingest import Book
from rpbench.tasks.modes.furina.pool.models import ChunkExtraction, ExtractedCharacter, ExtractedScene, Line

STITCH_THRESHOLD = 55.0


@dataclass
class RawScene:
    """A scene as extracted, possibly joined across chunks."""

    summary: str
    characters: list[ExtractedCharacter]
    dialogue: list[Line]
    chunk_indices: list[int]
    truncated: bool
    stitched: bool = False
    notes: list[str] = field(default_factory=list)


def extraction_request(book: Book, chunk_index: int, chunk_text: str) -> Request:
    text = prompts.render("furina/pool/extract", book.language, title=book.title, text=chunk_text).text
    return Request("extractor", [{"role": "user", "content": text}], schema=ChunkExtraction,
                   tag=f"extract:{book.book_id}:{chunk_index}")


def _names(scene: ExtractedScene | RawScene) -> set[str]:
    return {c.name.strip().lower() for c in scene.characters} | {ln.speaker.strip().lower() for ln in scene.dialogue}


def continuation_score(cut: RawScene, candidate: ExtractedScene) -> float:
    """How likely ``candidate`` continues ``cut``: summary similarity, or shared cast, whichever is higher."""
    summary = fuzz.token_set_ratio(cut.summary, candidate.summary)
    a, b = _names(cut), _names(candidate)
    cast = 100.0 * len(a & b) / len(a | b) if a | b else 0.0
    return max(summary, cast)


def _merge(carry: RawScene, nxt: ExtractedScene, chunk_index: int) -> None:
    known = {c.name for c in carry.characters}
    carry.characters += [c for c in nxt.characters if c.name not in known]
    carry.dialogue += nxt.dialogue
    carry.chunk_indices.append(chunk_index)
    carry.stitched = True
    carry.truncated = nxt.state == "truncated"


def stitch(per_chunk: list[list[ExtractedScene]], threshold: float = STITCH_THRESHOLD) -> list[RawScene]:
    """Join a scene cut at the end of a chunk to its best continuation in the next chunk.

    Only the last scene of a chunk can run over its edge. A continuation is
    the next chunk's scene that scores highest (and at least ``threshold``);
    a cut scene with none is kept as it is, with a note saying so.
    """
    out: list[RawScene] = []
    carry: RawScene | None = None
    for ci, scenes in enumerate(per_chunk):
        rest = list(scenes)
        if carry is not None:
            scores = [continuation_score(carry, sc) for sc in rest]
            best = max(range(len(rest)), key=scores.__getitem__, default=None)
            if best is not None and scores[best] >= threshold:
                _merge(carry, rest.pop(best), ci)
                if carry.truncated and not rest:
                    continue  # it runs on into the chunk after this one
            else:
                carry.notes.append("continuation not found in the next chunk")
            out.append(carry)
            carry = None
        for j, sc in enumerate(rest):
            raw = RawScene(sc.summary, list(sc.characters), list(sc.dialogue), [ci], sc.state == "truncated")
            if raw.truncated and j == len(rest) - 1:
                carry = raw
            else:
                out.append(raw)
    if carry is not None:
        carry.notes.append("still truncated at the end of the book")
        out.append(carry)
    return out
