"""CoSER as a benchmark mode: given-circumstance acting in scenes from books, judged per dimension."""

from __future__ import annotations

from pathlib import Path

from rpbench.flows.kit.front.registry import BenchmarkMode, SmokeStep, one_run
from rpbench.samples import sample_path
from rpbench.tasks.modes.coser.roles import ROLES


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
    item_table="CIRCUMSTANCE_SCORES",
    flows={"coser": "coser"},
    settings={"coser": "CoserSettings"},
    checks={"coser": "check_run"},
    annotation={"coser": "annotation:SCENE"},
    smoke=_smoke,
    suite=one_run("coser"),
)
