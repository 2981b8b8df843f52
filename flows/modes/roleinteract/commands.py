"""RoleInteract's command: `rpbench roleinteract run`."""

from __future__ import annotations

import typer

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.front.commands import settings_command, stages_line
from rpbench.flows.modes.roleinteract.settings import RoleInteractSettings
from rpbench.tasks.reports.render import fmt


def run(s: RoleInteractSettings) -> None:
    """Each model answers RoleInteract's questions in role (single and multiple choice, and memory questions
    answered in words); the paper's nine-column table with its unweighted average, and the analyses."""
    from rpbench.flows.modes.roleinteract.checks import check_run

    checked(check_run, s)  # bad input fails here, before Prefect or the gateway is even imported
    from rpbench.flows.kit.running.run import run_flow
    from rpbench.flows.modes.roleinteract.flows import roleinteract

    manifest = run_flow(roleinteract, settings=s)
    r = manifest.get("roleinteract", {})
    for model, cols in r.get("table", {}).items():
        typer.echo(f"{model}: " + "  ".join(f"{c} {fmt(v, 1)}" for c, v in cols.items()))
    for row in r.get("leaderboard", []):
        cols = r.get("table", {}).get(row["model"], {})
        present = sum(v is not None for c, v in cols.items() if c != "Avg")
        # The paper's Avg needs all nine columns; with fewer, say what the number is.
        name = "Avg" if cols.get("Avg") is not None else f"mean of {present} columns"
        typer.echo(f"{row['model']}: {name} {fmt(row['Avg'], 2)} [{fmt(row['ci_low'], 2)}, {fmt(row['ci_high'], 2)}]  "
                   f"n={row['n']} unreadable={fmt(row.get('unreadable'), 0)} (policy {r.get('policy')}) "
                   f"failed={row['failed']}")
    typer.echo(stages_line(manifest))
    typer.echo(f"report: {r.get('report')}")


def add_commands(app: typer.Typer) -> None:
    app.command("run")(settings_command(RoleInteractSettings, run))
