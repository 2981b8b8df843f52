"""``rpbench build`` and ``rpbench export``: the benchmark builder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rpbench.flows.cli.common import CacheOpt, ModelsOpt, opt, run_flow


def build(
    characters: Annotated[Path, typer.Option("--characters", help="Test characters file (JSON or YAML).")],
    pool: Annotated[Path, typer.Option("--pool", help="Pool folder (from `rpbench pool build`).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for dialogues, items, stats and manifest.")],
    only: Annotated[list[str] | None, typer.Option("--only", help="Use only these characters from the file (repeat).")] = None,
    threshold: Annotated[int, typer.Option("--threshold", help="tau: items wanted per dimension per character.")] = 10,
    source: Annotated[list[str] | None, typer.Option("--source", help="Source role or model string (repeat: round-robin per dialogue).")] = None,
    min_rounds: Annotated[int, typer.Option(help="The director may not end a scene before this round.")] = 6,
    max_rounds: Annotated[int, typer.Option(help="A scene ends at this round.")] = 20,
    max_test_gap: Annotated[int, typer.Option(help="The test character speaks at least once every this many turns.")] = 3,
    budget: Annotated[int, typer.Option("--budget", help="Most dialogues per character.")] = 40,
    keep_grade: Annotated[list[str] | None, typer.Option("--keep-grade", help="Dialogue grades kept (poor, moderate, high).")] = None,
    concurrency: Annotated[int, typer.Option(help="Dialogues simulated at once.")] = 8,
    seed: Annotated[int, typer.Option(help="Seed for scene order and DWRS tie-breaks.")] = 0,
    models: ModelsOpt = None,
    cache: CacheOpt = None,
) -> None:
    """Simulate dialogues (director, DWRS, source vs base judged), keep winning turns as benchmark items."""
    from rpbench.flows.modes.furina.build import build_benchmark
    from rpbench.tasks.modes.furina.characters.schema import load_characters

    from rpbench.storage.pool import read_scenes
    from rpbench.tasks.core.errors import InputError

    # Fail on bad input before the flow starts (and before any LLM call).
    names = {c.name for c in load_characters(characters)}
    unknown = sorted(set(only or []) - names)
    if unknown:
        raise InputError(f"{characters}: no character named {', '.join(unknown)}")
    if not (pool / "scenes.parquet").is_file():
        raise InputError(f"{pool}: no scenes.parquet (build a pool first: rpbench pool build)")
    read_scenes(pool / "scenes.parquet")
    manifest = run_flow(build_benchmark, characters=str(characters), pool=str(pool), out=str(out), only=only or None, tau=threshold,
                        min_rounds=min_rounds, max_rounds=max_rounds, max_test_gap=max_test_gap, max_dialogues_per_character=budget,
                        sources=source or None, keep_grades=keep_grade or None, concurrency=concurrency, seed=seed,
                        models=opt(models), cache=opt(cache))
    b = manifest.get("build", {})
    typer.echo(f"{b.get('dialogues', 0)} dialogues, {b.get('items', 0)} items; tau={b.get('tau')}")
    for name, dims in (b.get("coverage") or {}).items():
        state = "covered" if name not in b.get("budget_exhausted", []) else "BUDGET SPENT before coverage"
        typer.echo(f"  {name}: " + " ".join(f"{d}={n}" for d, n in dims.items()) + f"  ({state})")
    typer.echo(f"tables, chart and manifest: {out}/")


def export(
    bench: Annotated[Path, typer.Argument(help="Benchmark folder (from `rpbench build`).")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl or parquet.")] = "jsonl",
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (default: <bench>/export).")] = None,
) -> None:
    """Write a shareable dataset (items) with a dataset card (schema, counts, models, config)."""
    from rpbench.tasks.modes.furina.builder.export import export_benchmark
    from rpbench.tasks.core.errors import InputError

    if fmt not in ("jsonl", "parquet"):
        raise InputError(f"--format: unknown format '{fmt}' (use jsonl or parquet)")
    path = export_benchmark(bench, out or bench / "export", fmt)
    typer.echo(f"dataset and card in {path}/")
