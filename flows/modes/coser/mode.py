"""CoSER as a benchmark mode: given-circumstance acting in scenes from books, judged per dimension."""

from __future__ import annotations

from pathlib import Path

from rpbench.flows.kit.front.registry import BenchmarkMode, SmokeStep, one_run
from rpbench.samples import sample_path
from rpbench.tasks.modes.coser.roles import ROLES

FLOWS = "rpbench.flows.modes.coser.flows"
TABLES = "rpbench.tasks.modes.coser.tables"


def _smoke(work: Path) -> list[SmokeStep]:
    """Two models act the shipped circumstances (one book seen in training, one not)."""
    out = work / "coser"
    return [SmokeStep("coser", ("coser", "run", "--data", str(sample_path("coser", "example.json")),
                                "--model", "coser-actor", "--model", "judge", "--out", str(out),
                                "--resamples", "200"), out)]



COSER = BenchmarkMode(
    name="coser",
    description="CoSER: given-circumstance acting; models play every character of a scene from a book, a critic "
                "lists flaws per dimension against the book's own conversation.",
    roles=ROLES,
    item_table=f"{TABLES}:CIRCUMSTANCE_SCORES",
    report="rpbench.tasks.modes.coser.analysis:REPORT",
    flows={"coser": f"{FLOWS}:coser"},
    settings={"coser": "rpbench.flows.modes.coser.settings:CoserSettings"},
    checks={"coser": "rpbench.flows.modes.coser.checks:check_run"},
    commands="rpbench.flows.modes.coser.commands:add_commands",
    tables=(f"{TABLES}:CIRCUMSTANCES", f"{TABLES}:MESSAGES", f"{TABLES}:SCENE_ENDS", f"{TABLES}:CRITIQUES",
            f"{TABLES}:CIRCUMSTANCE_SCORES"),
    annotation={"coser": "rpbench.tasks.modes.coser.annotation:SCENE"},
    smoke=_smoke,
    suite=one_run("coser"),
)
