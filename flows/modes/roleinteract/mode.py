"""RoleInteract as a benchmark mode: social interaction of role-playing agents, alone and in groups."""

from __future__ import annotations

from pathlib import Path

from rpbench.flows.kit.front.registry import BenchmarkMode, SmokeStep, one_run
from rpbench.samples import sample_path
from rpbench.tasks.modes.roleinteract.roles import ROLES


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
    item_table="ITEM_SCORES",
    flows={"roleinteract": "roleinteract"},
    settings={"roleinteract": "RoleInteractSettings"},
    checks={"roleinteract": "check_run"},
    smoke=_smoke,
    suite=one_run("roleinteract"),
)
