"""``rpbench eval``: models under test against the base, judged in both orders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rpbench.flows.cli.common import CacheOpt, ModelsOpt, opt, run_flow


def eval_command(
    bench: Annotated[Path, typer.Option("--bench", help="Benchmark folder (from `rpbench build`).")],
    model: Annotated[list[str], typer.Option("--model", help="Model under test: a litellm model string, or a role name. Repeat for several.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for generations, judgments, scores and reports.")],
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples for the 95% intervals.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    models: ModelsOpt = None,
    cache: CacheOpt = None,
) -> None:
    """Evaluate models: answers, judgments in both orders (role `judge`), hallucination checks (role `checker`)."""
    from rpbench.flows.modes.furina.evaluate import evaluate
    from rpbench.flows.modes.furina.evaluate_stages import load_bench

    load_bench(bench)  # fail on a bad benchmark folder before the flow starts
    manifest = run_flow(evaluate, bench=str(bench), models=list(model), out=str(out), resamples=resamples, seed=seed,
                        models_file=opt(models), cache=opt(cache))
    e = manifest.get("evaluation", {})
    for r in e.get("leaderboard", []):
        typer.echo(f"{r['model']}: {r['score']:.1f} [{r['ci_low']:.1f}, {r['ci_high']:.1f}] n={r['n']} failed={r['failed']}")
    typer.echo(f"report: {e.get('report')}")


def validate_command(
    annotations: Annotated[Path, typer.Option("--annotations", help="Human labels: CSV or JSONL with item_id, annotator, dimension and/or score.")],
    eval_dir: Annotated[Path, typer.Option("--eval", help="Evaluation folder (from `rpbench eval`).")],
) -> None:
    """Compare the judge with human annotators: dimension accuracy, Pearson r per dimension, agreement."""
    import json

    from rpbench.storage.schemas import ITEM_SCORES
    from rpbench.storage.tables import atomic_write_bytes, read_rows
    from rpbench.tasks.modes.furina.evaluation.validation import load_annotations, validate, validation_markdown

    result = validate(load_annotations(annotations), read_rows(eval_dir / ITEM_SCORES.filename, ITEM_SCORES))
    md = validation_markdown(result)
    atomic_write_bytes(eval_dir / "validation.md", md.encode("utf-8"))
    atomic_write_bytes(eval_dir / "validation.json", json.dumps(result, indent=2).encode("utf-8"))
    typer.echo(md)
    typer.echo(f"written: {eval_dir / 'validation.md'} and validation.json")
