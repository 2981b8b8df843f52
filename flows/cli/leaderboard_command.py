"""``rpbench leaderboard RUN...``: one arena table over several runs' battles against the same baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rpbench.tasks.core.errors import InputError


def leaderboard(
    runs: Annotated[list[str], typer.Argument(help="Run folders holding battles.parquet (rpbench-auto runs, furina "
                                                   "eval runs), folders of such runs, or globs (runs/auto-*).")],
    out: Annotated[str, typer.Option("--out", help="Where leaderboard.parquet, .md and .html go.")] =
    "runs/leaderboard",
    resamples: Annotated[int, typer.Option("--resamples", min=40, help="Bootstrap resamples for the 95% "
                                                                      "intervals.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the bootstrap.")] = 0,
) -> None:
    """Fit one leaderboard over the battles of several runs against one baseline: each model's win rate against
    the baseline and its Bradley-Terry Elo, with 95% intervals, overall and per subset and language. No model is
    called: adding a run adds its models and refits. Runs with different judges, baselines or benchmark versions
    are refused, saying which. A benchmark's released leaderboard is shown beside, marked released."""
    from rpbench.flows.kit.front.registry import get_mode, load_ref
    from rpbench.storage.folder_lock import folder_lock
    from rpbench.storage.user_files import check_output_folder
    from rpbench.tasks.reports.arena_board import leaderboard as fit
    from rpbench.tasks.reports.arena_board import read_battles, run_folders, write_leaderboard

    try:
        check_output_folder(out)
    except ValueError as exc:
        raise InputError(f"--out: {exc}") from None
    folders = run_folders(runs)
    with folder_lock(out, "--out"):
        battles = read_battles(folders)  # read once: the checks, the fit and the page all work from these
        mode = get_mode(battles[0].benchmark)
        released = load_ref(mode.arena_released) if mode.arena_released else None
        rows = fit(battles, resamples, seed, released)
        written = write_leaderboard(rows, battles, Path(out), folders)
    for r in sorted((r for r in rows if r.subset == "all" and r.language == "all" and not r.released),
                    key=lambda r: -(r.elo or 0)):
        rate = "-" if r.win_rate is None else f"{100 * r.win_rate:.1f}%"
        elo = "-" if r.elo is None else f"{r.elo:.1f}"
        band = "" if r.elo_low is None or r.elo_high is None else f" [{r.elo_low:.1f}, {r.elo_high:.1f}]"
        typer.echo(f"{r.model}{' (baseline)' if r.model == r.baseline else ''}: Elo {elo}{band}  win rate {rate} "
                   f"over {r.battles} decisive battles")
    for kind, path in written.items():
        typer.echo(f"{kind}: {path}")
