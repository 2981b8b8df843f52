"""``rpbench eval``: models under test against the base, judged in both orders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli_common import CacheOpt, ModelsOpt, opt, run_flow


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
    from flows.evaluate import evaluate

    manifest = run_flow(evaluate, bench=str(bench), models=list(model), out=str(out), resamples=resamples, seed=seed,
                        models_file=opt(models), cache=opt(cache))
    e = manifest.get("evaluation", {})
    for r in e.get("leaderboard", []):
        typer.echo(f"{r['model']}: {r['score']:.1f} [{r['ci_low']:.1f}, {r['ci_high']:.1f}] n={r['n']} failed={r['failed']}")
    typer.echo(f"report: {e.get('report')}")
