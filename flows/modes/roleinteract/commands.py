"""RoleInteract's command: `rpbench roleinteract run`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

from rpbench.flows.kit.front.commands import run_evaluation, settings_command
from rpbench.flows.modes.roleinteract.settings import RoleInteractSettings
from rpbench.tasks.reports.render import fmt


def _lines(r: dict[str, Any]) -> Iterator[str]:
    for model, cols in r.get("table", {}).items():
        yield f"{model}: " + "  ".join(f"{c} {fmt(v, 1)}" for c, v in cols.items())
    for row in r.get("leaderboard", []):
        cols = r.get("table", {}).get(row["model"], {})
        present = sum(v is not None for c, v in cols.items() if c != "Avg")
        # The paper's Avg needs all nine columns; with fewer, say what the number is.
        name = "Avg" if cols.get("Avg") is not None else f"mean of {present} columns"
        yield (f"{row['model']}: {name} {fmt(row['Avg'], 2)} [{fmt(row['ci_low'], 2)}, {fmt(row['ci_high'], 2)}]  "
               f"n={row['n']} unreadable={fmt(row.get('unreadable'), 0)} (policy {r.get('policy')}) "
               f"failed={row['failed']}")


def run(s: RoleInteractSettings) -> None:
    """Each model answers RoleInteract's questions in role (single and multiple choice, and memory questions
    answered in words); the paper's nine-column table with its unweighted average, and the analyses."""
    run_evaluation(s, "rpbench.flows.modes.roleinteract.checks:check_run",
                   "rpbench.flows.modes.roleinteract.flows:roleinteract", "roleinteract", _lines)


def add_commands(app: typer.Typer) -> None:
    app.command("run")(settings_command(RoleInteractSettings, run))
