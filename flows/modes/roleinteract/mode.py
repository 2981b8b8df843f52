"""RoleInteract as a benchmark mode: social interaction of role-playing agents, alone and in groups."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rpbench.flows.kit.registry import BenchmarkMode, SmokeStep
from rpbench.flows.modes.roleinteract.commands import add_commands
from rpbench.samples import sample_path
from rpbench.tasks.modes.roleinteract.analysis import REPORT
from rpbench.tasks.modes.roleinteract.roles import ROLES
from rpbench.tasks.modes.roleinteract.tables import ANSWERS, ITEM_SCORES, ITEMS


def _flows() -> dict[str, Any]:
    from rpbench.flows.modes.roleinteract.flows import roleinteract

    return {"roleinteract": roleinteract}


def _smoke(work: Path) -> list[SmokeStep]:
    """Two models over the shipped example file (every column, English and Chinese)."""
    out = work / "roleinteract"
    return [SmokeStep("roleinteract", ("roleinteract", "run", "--data", str(sample_path("roleinteract",
                                                                                         "example.json")),
                                       "--model", "roleinteract-player", "--model", "judge", "--out", str(out),
                                       "--resamples", "200"), out)]


ROLEINTERACT = BenchmarkMode(
    name="roleinteract",
    description="RoleInteract: multiple-choice and memory questions on a role's style, knowledge, emotional "
                "perception, memory and social preference in groups; the nine-column table and its average.",
    roles=ROLES,
    item_table=ITEM_SCORES,
    report=REPORT,
    flows=_flows,
    commands=add_commands,
    tables=(ITEMS, ANSWERS, ITEM_SCORES),
    smoke=_smoke,
)
