"""RoleInteract as a benchmark mode: social interaction of role-playing agents, alone and in groups."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rpbench.flows.kit.front.registry import BenchmarkMode, one_run, smoke_run
from rpbench.flows.kit.front.run_command import RunCommand
from rpbench.samples import sample_path
from rpbench.tasks.modes.roleinteract.roles import ROLES


def _lines(r: dict[str, Any]) -> Iterator[str]:
    from rpbench.tasks.reports.render import fmt

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


ROLEINTERACT = BenchmarkMode(
    name="roleinteract",
    description="RoleInteract: multiple-choice and memory questions on a role's style, knowledge, emotional "
                "perception, memory and social preference in groups; the nine-column table and its average.",
    roles=ROLES,
    item_table="ITEM_SCORES",
    flows={"roleinteract": "roleinteract"},
    settings={"roleinteract": "RoleInteractSettings"},
    checks={"roleinteract": "check_run"},
    commands=RunCommand("roleinteract", _lines),
    # Two models over the shipped example file (every column, English and Chinese).
    releases="release:RELEASE",
    smoke=smoke_run("roleinteract", "--data", str(sample_path("roleinteract", "example.json")), "--model",
                    "roleinteract-player", "--model", "judge"),
    suite=one_run("roleinteract"),
)
