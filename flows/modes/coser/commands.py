"""CoSER's command: `rpbench coser run`."""

from __future__ import annotations

import typer

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.front.commands import settings_command, stages_line
from rpbench.flows.modes.coser.settings import CoserSettings
from rpbench.tasks.reports.render import fmt


def run(s: CoserSettings) -> None:
    """Given-circumstance acting (CoSER): each model plays every speaking character of a scene from a book, with an
    environment (role coser-environment) and a next-speaker predictor (role coser-next-speaker), up to 20 rounds;
    a critic (--judge, role coser-critic) lists flaws per dimension against the book's conversation; CoSER's
    scores (Storyline Consistency, Anthropomorphism, Character Fidelity, Storyline Quality, their average),
    BLEU and ROUGE-L."""
    from rpbench.flows.modes.coser.checks import check_run

    checked(check_run, s)  # bad input fails here, before Prefect or the gateway is even imported
    from rpbench.flows.kit.running.run import run_flow
    from rpbench.flows.modes.coser.flows import coser

    manifest = run_flow(coser, settings=s)
    r = manifest.get("coser", {})
    for row in r.get("leaderboard", []):
        dims = "  ".join(f"{d} {fmt(row.get(d), 1)}" for d in ("Storyline Consistency", "Anthropomorphism",
                                                               "Character Fidelity", "Storyline Quality"))
        typer.echo(f"{row['model']}: avg {fmt(row['avg'], 2)} [{fmt(row['ci_low'], 2)}, {fmt(row['ci_high'], 2)}]"
                   f"  {dims}  BLEU {fmt(row.get('BLEU'), 4)}  ROUGE-L {fmt(row.get('ROUGE-L'), 4)}  "
                   f"n={row['n']} failed={row['failed']} next speakers drawn={fmt(row.get('drawn'), 0)}")
    if r.get("empty_thoughts"):
        typer.echo(f"key characters with an empty inner thought: {r['empty_thoughts']} (their actors get none)")
    typer.echo(stages_line(manifest))
    typer.echo(f"report: {r.get('report')}")


def add_commands(app: typer.Typer) -> None:
    app.command("run")(settings_command(CoserSettings, run))
