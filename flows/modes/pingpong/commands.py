"""What PingPong's run and rejudge print, and `rpbench pingpong agreement` (run and rejudge are the kit's
commands, from the spec)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.reports.render import fmt


def lines(p: dict[str, Any]) -> Iterator[str]:
    yield (f"judges: {', '.join(p.get('judges', []))}; conversations: {p.get('conversations')}, "
           f"scored {p.get('scored')}, refusals {p.get('refusals')}")
    for r in p.get("leaderboard", []):
        yield (f"{r['model']}: LN {fmt(r['ln_score'], 2)} [{fmt(r['ci_low'], 2)}, {fmt(r['ci_high'], 2)}]  "
               f"agg {fmt(r['final'], 2)}  refusal ratio {fmt(r['refusal_ratio'], 2)}  "
               f"length {fmt(r['length'], 0)}  n={r['n']} failed={r['failed']}")
    if p.get("unread_greetings"):
        yield (f"greetings not sent (PingPong's code reads initial_message only; --any-greeting sends them): "
               f"{', '.join(p['unread_greetings'])}")


def agreement(
    annotations: Annotated[Path, typer.Option(
        "--annotations", help="Human ratings: CSV or JSONL with model, conversation_id, annotator, in_character, "
                              "entertaining, fluency (1-5; blank = not rated).")],
    run_dir: Annotated[Path, typer.Option("--run", help="A PingPong run folder (from `rpbench pingpong run`).")],
) -> None:
    """Judges against people: Spearman with p-values per criterion for each judge and their average;
    Krippendorff's alpha and rank correlations between annotators."""
    import json

    from rpbench.storage.tables import atomic_write_bytes, read_records
    from rpbench.tasks.modes.pingpong.agreement import agreement as compute
    from rpbench.tasks.modes.pingpong.agreement import agreement_markdown, load_ratings
    from rpbench.tasks.modes.pingpong.tables import TURN_JUDGMENTS

    ratings = load_ratings(annotations)
    table = run_dir / TURN_JUDGMENTS.filename
    if not table.is_file():
        raise InputError(f"{run_dir}: no {TURN_JUDGMENTS.filename} (run `rpbench pingpong run` into it first)")
    result = compute(ratings, read_records(table, TURN_JUDGMENTS), annotations)
    md = agreement_markdown(result)
    atomic_write_bytes(run_dir / "agreement.md", md.encode("utf-8"))
    atomic_write_bytes(run_dir / "agreement.json", json.dumps(result, indent=2, default=str).encode("utf-8"))
    typer.echo(md)
    typer.echo(f"written: {run_dir / 'agreement.md'} and agreement.json")
