"""CoSER's command: `rpbench coser run`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

from rpbench.flows.kit.front.commands import run_evaluation, settings_command
from rpbench.flows.modes.coser.settings import CoserSettings
from rpbench.tasks.reports.render import fmt

DIMENSIONS = ("Storyline Consistency", "Anthropomorphism", "Character Fidelity", "Storyline Quality")


def _lines(r: dict[str, Any]) -> Iterator[str]:
    for row in r.get("leaderboard", []):
        dims = "  ".join(f"{d} {fmt(row.get(d), 1)}" for d in DIMENSIONS)
        yield (f"{row['model']}: avg {fmt(row['avg'], 2)} [{fmt(row['ci_low'], 2)}, {fmt(row['ci_high'], 2)}]  "
               f"{dims}  BLEU {fmt(row.get('BLEU'), 4)}  ROUGE-L {fmt(row.get('ROUGE-L'), 4)}  n={row['n']} "
               f"failed={row['failed']} next speakers drawn={fmt(row.get('drawn'), 0)}")
    if r.get("empty_thoughts"):
        yield f"key characters with an empty inner thought: {r['empty_thoughts']} (their actors get none)"


def run(s: CoserSettings) -> None:
    """Given-circumstance acting (CoSER): each model plays every speaking character of a scene from a book, with an
    environment (role coser-environment) and a next-speaker predictor (role coser-next-speaker), up to 20 rounds;
    a critic (--judge, role coser-critic) lists flaws per dimension against the book's conversation; CoSER's
    scores (Storyline Consistency, Anthropomorphism, Character Fidelity, Storyline Quality, their average),
    BLEU and ROUGE-L."""
    run_evaluation(s, "rpbench.flows.modes.coser.checks:check_run", "rpbench.flows.modes.coser.flows:coser", "coser",
                   _lines)


def add_commands(app: typer.Typer) -> None:
    app.command("run")(settings_command(CoserSettings, run))
