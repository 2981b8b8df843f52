"""DMT-RoleBench as a benchmark mode: dialogues steered by topic and intent, per-round binary labels, DMT-Score."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rpbench.flows.kit.registry import BenchmarkMode, SmokeStep
from rpbench.flows.modes.dmt.commands import add_commands
from rpbench.samples import sample_path
from rpbench.tasks.modes.dmt.analysis import REPORT
from rpbench.tasks.modes.dmt.roles import ROLES
from rpbench.tasks.modes.dmt.tables import DIALOGUE_SCORES, LABELS, ROUNDS


def _flows() -> dict[str, Any]:
    from rpbench.flows.modes.dmt.flows import dmt

    return {"dmt": dmt}


def _smoke(work: Path) -> list[SmokeStep]:
    """Two models, one English and one Chinese seed, two formats, three rounds."""
    out = work / "dmt"
    return [SmokeStep("dmt", ("dmt", "run", "--seeds", str(sample_path("dmt", "seeds.yaml")), "--model",
                              "dmt-player", "--model", "dmt-judge", "--seed-id", "harbour-pilot-knowledge",
                              "--seed-id", "sun-wukong-identity", "--format", "minimalist", "--format", "detailed",
                              "--max-rounds", "3", "--out", str(out), "--resamples", "200"), out)]


DMT = BenchmarkMode(
    name="dmt",
    description="DMT-RoleBench: a generator steers multi-turn dialogues by topic and intent; each round is "
                "labelled good/bad on the metrics of the role type; strict and lenient DMT-Scores by rounds.",
    roles=ROLES,
    item_table=DIALOGUE_SCORES,
    report=REPORT,
    flows=_flows,
    commands=add_commands,
    tables=(ROUNDS, LABELS, DIALOGUE_SCORES),
    smoke=_smoke,
)
