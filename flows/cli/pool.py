"""``rpbench pool ...``: build, chunk and extend a character-scene pool."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rpbench.flows.cli.common import CacheOpt, ModelsOpt, opt, run_flow

app = typer.Typer(help="Turn books into a pool of ready scenes; inspect chunking; add your own scenes.",
                  no_args_is_help=True)

BooksArg = Annotated[list[Path], typer.Argument(help="Book files: .txt (any common encoding) or .epub.")]
LangOpt = Annotated[str | None, typer.Option("--language", help="en or zh; detected per book when not given.")]
TargetOpt = Annotated[int, typer.Option("--target-tokens", help="Chunk size aimed at when splitting.")]
MinOpt = Annotated[int, typer.Option("--min-tokens", help="Chapters are merged until a chunk has this many tokens.")]
MaxOpt = Annotated[int, typer.Option("--max-tokens", help="A chunk above this is split at paragraph boundaries.")]


@app.command("chunk")
def chunk(
    books: BooksArg,
    out: Annotated[Path, typer.Option("--out", help="Folder for books.parquet and chunks.parquet.")],
    language: LangOpt = None,
    target_tokens: TargetOpt = 8192,
    min_tokens: MinOpt = 4096,
    max_tokens: MaxOpt = 16384,
) -> None:
    """Static chunking only (chapter headings, token budget): no LLM call, to check before extraction."""
    from rpbench.storage.schemas import BOOKS, CHUNKS
    from rpbench.storage.tables import write_table
    from rpbench.tasks.modes.furina.pool.build import book_row, chunk_rows
    from rpbench.tasks.modes.furina.pool.chunking import ChunkingConfig, static_chunks
    from rpbench.tasks.modes.furina.pool.ingest import read_book

    cfg = ChunkingConfig(target_tokens, min_tokens, max_tokens)
    all_books, all_chunks = [], []
    for path in books:
        book = read_book(path, language)
        spans = [(s.start, s.end) for s in static_chunks(book.text, book.language, cfg)]
        rows = chunk_rows(book, spans, ["static"] * len(spans))
        all_books.append(book_row(book, len(rows)))
        all_chunks += rows
        sizes = [r["n_tokens"] for r in rows]
        typer.echo(f"{path}: {book.language}, {all_books[-1]['n_headings']} headings, {len(rows)} chunks, "
                   f"tokens min {min(sizes)} / max {max(sizes)}")
    write_table(out / BOOKS.filename, all_books, BOOKS)
    write_table(out / CHUNKS.filename, all_chunks, CHUNKS)
    typer.echo(f"wrote {out / BOOKS.filename} and {out / CHUNKS.filename}")


@app.command("build")
def build(
    books: BooksArg,
    out: Annotated[Path, typer.Option("--out", help="Folder for the pool's tables and manifest.")],
    language: LangOpt = None,
    target_tokens: TargetOpt = 8192,
    min_tokens: MinOpt = 4096,
    max_tokens: MaxOpt = 16384,
    min_utterances: Annotated[int, typer.Option(help="Drop scenes with fewer utterances.")] = 4,
    min_speakers: Annotated[int, typer.Option(help="Drop scenes with fewer speakers.")] = 2,
    plot_aware: Annotated[bool, typer.Option(help="Let the LLM move unfinished chunk endings forward.")] = True,
    models: ModelsOpt = None,
    cache: CacheOpt = None,
) -> None:
    """Chunk the books, extract scenes with the `extractor` role, assemble profiles; write the pool."""
    from rpbench.flows.modes.furina.pool import build_pool
    from rpbench.tasks.modes.furina.pool.ingest import read_book

    for path in books:  # fail on a bad book before any LLM call
        read_book(path, language)
    manifest = run_flow(build_pool, books=[str(p) for p in books], out=str(out), language=language,
                        target_tokens=target_tokens, min_tokens=min_tokens, max_tokens=max_tokens,
                        min_utterances=min_utterances, min_speakers=min_speakers, plot_aware=plot_aware,
                        models=opt(models), cache=opt(cache))
    pool = manifest.get("pool", {})
    typer.echo(f"pool: {pool.get('scenes', 0)} scenes kept, {pool.get('dropped', 0)} dropped "
               f"(see dropped_scenes.parquet), {pool.get('chunks', 0)} chunks; failed calls: {pool.get('failed_calls')}")
    typer.echo(f"tables and manifest: {out}/")


@app.command("add")
def add(
    file: Annotated[Path, typer.Argument(help="JSON or YAML: one scene or a list, same fields as the pool's scenes.")],
    pool: Annotated[Path, typer.Option("--pool", help="Pool folder (holding scenes.parquet).")],
) -> None:
    """Validate your own scenes and append them to a pool."""
    from rpbench.storage.pool import read_scenes, write_scenes
    from rpbench.storage.schemas import SCENES
    from rpbench.tasks.modes.furina.pool.custom import load_custom_scenes, merge_scenes

    new = load_custom_scenes(file)
    path = pool / SCENES.filename
    existing = read_scenes(path) if path.exists() else []
    write_scenes(path, merge_scenes(existing, new, str(file)))
    typer.echo(f"added {len(new)} scene(s) to {path} (now {len(existing) + len(new)})")
