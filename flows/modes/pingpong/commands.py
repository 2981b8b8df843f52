"""What PingPong's run and rejudge print, and `rpbench pingpong agreement` (run and rejudge are the kit's
commands, from the spec)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

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
    Krippendorff's alpha and rank correlations between annotators; and the measures every benchmark reports
    (agreement.parquet)."""
    from rpbench.flows.kit.front.agreement import publish_agreement
    from rpbench.storage.tables import run_records
    from rpbench.tasks.modes.pingpong.agreement import agreement as compute
    from rpbench.tasks.modes.pingpong.agreement import agreement_markdown, judge_rows, load_ratings
    from rpbench.tasks.modes.pingpong.tables import TURN_JUDGMENTS

    ratings = load_ratings(annotations)
    judgments = run_records(run_dir, TURN_JUDGMENTS, "rpbench pingpong run")
    result = compute(ratings, judgments, annotations)
    if result["left_out"]:
        model, conversation = result["first_left_out"]
        typer.echo(f"note: {result['left_out']} of {result['conversations']} annotated conversations are not in this "
                   f"run and are left out (first: model {model}, conversation {conversation})", err=True)
    publish_agreement(run_dir, "agreement", agreement_markdown(result), result, judge_rows(ratings, judgments))
