"""Fragment assembly (FURINA's structure): background, motivations, profiles, original dialogue."""

from __future__ import annotations

import hashlib

from rpbench import prompts
from rpbench.tasks.llm import CallResult, Request
from rpbench.tasks.modes.furina.domain import Scene
from rpbench.tasks.modes.furina.pool.ingest import Book
from rpbench.tasks.modes.furina.pool.models import Fragment, fragment_schema, sketch_to_character
from rpbench.tasks.modes.furina.records import RawScene


def speakers(scene: RawScene) -> list[str]:
    """Speakers in order of first appearance."""
    return list(dict.fromkeys(line.speaker for line in scene.dialogue))


def fragment_request(book: Book, index: int, scene: RawScene) -> Request[Fragment]:
    text = prompts.render(
        "furina/pool/fragment", book.language, title=book.title, summary=scene.summary,
        dialogue=scene.dialogue, names=speakers(scene),
    ).text
    return Request("extractor", [{"role": "user", "content": text}], schema=fragment_schema(speakers(scene)),
                   tag=f"fragment:{book.book_id}:{index}")


def scene_id(book: Book, scene: RawScene) -> str:
    blob = book.book_id + "\n" + "\n".join(f"{ln.speaker}:{ln.text}" for ln in scene.dialogue)
    return f"{book.book_id}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"


def assemble(book: Book, scene: RawScene, result: CallResult[Fragment]) -> Scene | str:
    """The finished scene, or the reason there is none. Every speaker must get a profile."""
    if not result.ok:
        return f"fragment call failed: {result.error}"
    fragment = result.parsed
    by_name = {c.name.strip(): c for c in fragment.characters}
    missing = [name for name in speakers(scene) if name not in by_name]
    if missing:
        return f"no profile for {', '.join(missing)}"
    return Scene(
        scene_id=scene_id(book, scene),
        book_id=book.book_id,
        language=book.language,
        summary=scene.summary,
        background=fragment.world,
        situation=fragment.situation,
        original_dialogue=scene.dialogue,
        characters=[sketch_to_character(by_name[name]) for name in speakers(scene)],
        chunk_indices=scene.chunk_indices,
    )
