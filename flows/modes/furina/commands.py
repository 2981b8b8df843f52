"""FURINA's commands that are more than a flow (pool chunk and add, characters check, export, validate, demo),
and what the others print about their runs: those are the kit's, from the spec (mode.py). The work behind
them is imported when a command runs, so `--help` stays quick.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from rpbench.flows.kit.commands.settings_commands import settings_command
from rpbench.flows.modes.furina.settings import (
    BuildSettings,
    ChunkSettings,
    DemoSettings,
    PoolSettings,
    SynthesisSettings,
)
from rpbench.tasks.core.errors import InputError


# -- pool -------------------------------------------------------------------------------------------
def pool_chunk(s: ChunkSettings) -> None:
    """Static chunking only (chapter headings, token budget): no LLM call, to check before extraction."""
    from rpbench.storage.tables import write_records
    from rpbench.tasks.modes.furina.pool.build import chunk_book
    from rpbench.tasks.modes.furina.pool.ingest import read_book
    from rpbench.tasks.modes.furina.tables import BOOKS, CHUNKS

    books, chunks = [], []
    for path in s.books:
        record, rows = chunk_book(read_book(path, s.language), s.chunking())
        books.append(record)
        chunks += rows
        sizes = [r.n_tokens for r in rows]
        typer.echo(f"{path}: {record.language}, {record.n_headings} headings, {len(rows)} chunks, "
                   f"tokens min {min(sizes)} / max {max(sizes)}")
    out = Path(s.out)
    write_records(out / BOOKS.filename, books, BOOKS)
    write_records(out / CHUNKS.filename, chunks, CHUNKS)
    typer.echo(f"wrote {out / BOOKS.filename} and {out / CHUNKS.filename}")


def pool_lines(pool: dict[str, Any], s: PoolSettings) -> Iterator[str]:
    yield (f"pool: {pool.get('scenes', 0)} scenes kept, {pool.get('dropped', 0)} dropped (see "
           f"dropped_scenes.parquet), {pool.get('chunks', 0)} chunks; failed calls: {pool.get('failed_calls')}")
    yield f"tables and manifest: {s.out}/"


def pool_add(
    file: Annotated[Path, typer.Argument(help="JSON or YAML: one scene or a list, same fields as the pool's scenes.")],
    pool: Annotated[Path, typer.Option("--pool", help="Pool folder (holding scenes.parquet).")],
    new_pool: Annotated[bool, typer.Option("--new", help="Start a new pool in --pool if it holds none.")] = False,
) -> None:
    """Validate your own scenes and append them to a pool (or start one with --new)."""
    from rpbench.storage.user_files import check_output_folder
    from rpbench.tasks.modes.furina.pool.custom import merge_scenes
    from rpbench.tasks.modes.furina.scene_files import load_scene_file, read_scenes, write_scenes
    from rpbench.tasks.modes.furina.tables import SCENES

    try:
        check_output_folder(str(pool))
    except ValueError as exc:
        raise InputError(f"--pool: {exc}") from None
    path = pool / SCENES.filename
    if not path.exists() and not new_pool:
        # A mistyped folder must not quietly become a second, one-scene pool.
        raise InputError(f"--pool: {pool} holds no {SCENES.filename}; check the folder, or add --new to start a "
                         "pool there")
    new = load_scene_file(file)
    existing = read_scenes(path) if path.exists() else []
    merged = merge_scenes(existing, new, str(file))
    added = len(merged) - len(existing)
    if added or not path.exists():
        write_scenes(path, merged)
    same = f"; {len(new) - added} already there, unchanged" if added < len(new) else ""
    typer.echo(f"added {added} scene(s) to {path} (now {len(merged)}){same}")


# -- characters -------------------------------------------------------------------------------------
def characters_check(
    files: Annotated[list[Path], typer.Argument(help="Character files (JSON or YAML; one character or a list).")],
) -> None:
    """Validate character files and print a summary; errors name the file, the character and the field."""
    from rpbench.tasks.modes.furina.character_files import load_characters

    for path in files:
        characters = load_characters(path)
        typer.echo(f"{path}: {len(characters)} character(s)")
        for c in characters:
            public = len(c.public())
            typer.echo(f"  {c.name} [{c.language}, {c.type}] {public} public / {len(c.attributes) - public} private"
                       f" attribute(s){f' - {c.source}' if c.source else ''}")


def synthesis_lines(got: dict[str, Any], s: SynthesisSettings) -> Iterator[str]:
    yield (f"{got.get('characters', 0)} character(s) in {s.out}; {got.get('scenes', 0)} scene(s) in "
           f"{got.get('scenes_file')}")
    for failure in got.get("failed_groups", []):
        typer.echo(f"failed: {failure}", err=True)


# -- benchmark --------------------------------------------------------------------------------------
def build_lines(b: dict[str, Any], s: BuildSettings) -> Iterator[str]:
    yield f"{b.get('dialogues', 0)} dialogues, {b.get('items', 0)} items; tau={b.get('tau')}"
    for name, dims in (b.get("coverage") or {}).items():
        state = "covered" if name not in b.get("budget_exhausted", []) else "BUDGET SPENT before coverage"
        yield f"  {name}: " + " ".join(f"{d}={n}" for d, n in dims.items()) + f"  ({state})"
    yield f"tables, chart and manifest: {s.out}/"


def export(
    bench: Annotated[Path, typer.Argument(help="Benchmark folder (from `rpbench furina build`).")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl or parquet.")] = "jsonl",
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (default: <bench>/export).")] = None,
) -> None:
    """Write a shareable dataset (items) with a dataset card (schema, counts, models, config)."""
    from rpbench.tasks.modes.furina.builder.export import export_benchmark

    if fmt not in ("jsonl", "parquet"):
        raise InputError(f"--format: unknown format '{fmt}' (use jsonl or parquet)")
    if out is not None and out.exists() and not out.is_dir():
        raise InputError(f"--out: {out} is a file, not a folder")
    path = export_benchmark(bench, out or bench / "export", fmt)
    typer.echo(f"dataset and card in {path}/")


# -- evaluation (its run prints the kit's leaderboard lines) ------------------------------------------
def validate(
    annotations: Annotated[Path, typer.Option(
        "--annotations", help="Human labels: CSV or JSONL with item_id, annotator, dimension and/or score.")],
    eval_dir: Annotated[Path, typer.Option("--eval", help="Evaluation folder (from `rpbench furina eval`).")],
) -> None:
    """Compare the judge with human annotators: dimension accuracy, Pearson r per dimension, agreement."""
    from rpbench.flows.kit.front.agreement import publish_agreement, recorded_model
    from rpbench.storage.tables import read_rows, run_table
    from rpbench.tasks.core.records import JudgeAgreement
    from rpbench.tasks.modes.furina.evaluation.validation import check_models, load_annotations, validation_markdown
    from rpbench.tasks.modes.furina.evaluation.validation import validate as validate_judge
    from rpbench.tasks.modes.furina.tables import ITEM_SCORES

    labels = load_annotations(annotations)
    scores_file = run_table(eval_dir, ITEM_SCORES, "rpbench furina eval")
    item_scores = read_rows(scores_file, ITEM_SCORES)
    check_models(labels, sorted({s["model"] for s in item_scores}), annotations)
    result = validate_judge(labels, item_scores, recorded_model(eval_dir, "judge"))
    if len(result["unknown_items"]) == len({a["item_id"] for a in labels}):
        # Nothing to compare: say so, and leave any earlier validation of this folder as it was.
        raise InputError(f"{annotations}: none of the annotated item ids is in {scores_file} "
                         f"(first: '{result['unknown_items'][0]}'); annotations for another benchmark?")
    rows = [JudgeAgreement.model_validate(r) for r in result.pop("judges")]
    publish_agreement(eval_dir, "validation", validation_markdown(result), result, rows)


# -- the demo ---------------------------------------------------------------------------------------
def demo(s: DemoSettings) -> None:
    """The whole pipeline on the embedded local model (no keys, no network): pool, benchmark, evaluation."""
    from rpbench.flows.kit.running.run import run_flow
    from rpbench.flows.modes.furina.demo import demo as demo_flow
    from rpbench.tasks.reports.render import fmt
    from rpbench.tasks.reports.summary import run_summary_markdown

    manifest = run_flow(demo_flow, settings=s)
    out = Path(s.out)
    typer.echo("")
    typer.echo(run_summary_markdown(manifest, str(out / "eval")))
    for r in manifest.get("evaluation", {}).get("leaderboard", []):
        typer.echo(f"{r['model']}: score {fmt(r['score'])} [{fmt(r['ci_low'])}, {fmt(r['ci_high'])}] on {r['n']} items")
    for part, this in manifest.get("demo", {}).items():
        typer.echo(f"{part}: {this['stages']} stages, {this['cached']} cached, {this['calls_sent']} calls sent, "
                   f"{this.get('seconds', 0):.0f} s")
    typer.echo(f"Pool: {out}/pool  Benchmark: {out}/bench  Evaluation: {out}/eval")
    report = (out / "eval" / "report.html").resolve()
    typer.echo(f"Report: {out}/eval/report.html  Every reply: {out}/eval/viewer.html")
    typer.echo(f"Open it in a browser: {report.as_uri()}  (or: python -m webbrowser {report})")


chunk_command = settings_command(ChunkSettings, pool_chunk, starts_workers=False)
demo_command = settings_command(DemoSettings, demo)
