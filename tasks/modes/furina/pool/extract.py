"""Scene extraction per chunk, and stitching of scenes cut at a chunk edge."""

from __future__ import annotations

from collections.abc import Sequence

from rapidfuzz import fuzz

from rpbench import prompts
from rpbench.tasks.llm import CallResult, Request
from rpbench.tasks.modes.furina.domain import Line
from rpbench.tasks.modes.furina.pool.ingest import Book
from rpbench.tasks.modes.furina.pool.models import ChunkExtraction, ExtractedScene
from rpbench.tasks.modes.furina.records import Chunk, Extraction, RawScene

STITCH_THRESHOLD = 55.0


def extraction_request(book: Book, chunk_index: int, chunk_text: str) -> Request[ChunkExtraction]:
    text = prompts.render("furina/pool/extract", book.language, title=book.title, text=chunk_text).text
    return Request("extractor", [{"role": "user", "content": text}], schema=ChunkExtraction,
                   tag=f"extract:{book.book_id}:{chunk_index}")


def extraction_record(chunk: Chunk, result: CallResult[ChunkExtraction]) -> Extraction:
    if result.ok:
        return Extraction(book_id=chunk.book_id, chunk_index=chunk.chunk_index, status="ok", error=None,
                          scenes=result.parsed.scenes)
    return Extraction(book_id=chunk.book_id, chunk_index=chunk.chunk_index, status="failed", error=result.error,
                      scenes=[])


def _names(scene: ExtractedScene | RawScene) -> set[str]:
    return {c.name.strip().lower() for c in scene.characters} | {ln.speaker.strip().lower() for ln in scene.dialogue}


def continuation_score(cut: RawScene, candidate: ExtractedScene) -> float:
    """How likely ``candidate`` continues ``cut``: summary similarity, or shared cast, whichever is higher."""
    summary = fuzz.token_set_ratio(cut.summary, candidate.summary)
    a, b = _names(cut), _names(candidate)
    cast = 100.0 * len(a & b) / len(a | b) if a | b else 0.0
    return max(summary, cast)


def _raw(book_id: str, scene: ExtractedScene, chunk_index: int) -> RawScene:
    return RawScene(
        book_id=book_id, summary=scene.summary,
        characters=[c.model_copy() for c in scene.characters],  # copies: renaming them leaves the extraction as it was
        dialogue=[Line(speaker=ln.speaker, text=ln.text) for ln in scene.dialogue],
        chunk_indices=[chunk_index], truncated=scene.state == "truncated",
    )


def _merge(carry: RawScene, nxt: ExtractedScene, chunk_index: int) -> None:
    more = _raw(carry.book_id, nxt, chunk_index)
    known = {c.name for c in carry.characters}
    carry.characters += [c for c in more.characters if c.name not in known]
    carry.dialogue += more.dialogue
    carry.chunk_indices.append(chunk_index)
    carry.stitched = True
    carry.truncated = more.truncated


def stitch(book_id: str, per_chunk: Sequence[Sequence[ExtractedScene]],
           threshold: float = STITCH_THRESHOLD) -> list[RawScene]:
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
            raw = _raw(book_id, sc, ci)
            if raw.truncated and j == len(rest) - 1:
                carry = raw
            else:
                out.append(raw)
    if carry is not None:
        carry.notes.append("still truncated at the end of the book")
        out.append(carry)
    return out
