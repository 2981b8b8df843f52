"""DMT-RoleBench as a benchmark mode: dialogues steered by topic and intent, per-round binary labels, DMT-Score."""

from __future__ import annotations

from pathlib import Path

from rpbench.flows.kit.front.registry import BenchmarkMode, SmokeStep, one_run
from rpbench.samples import sample_path
from rpbench.tasks.modes.dmt.roles import ROLES


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
    item_table="DIALOGUE_SCORES",
    flows={"dmt": "dmt"},
    settings={"dmt": "DmtSettings"},
    checks={"dmt": "check_run"},
    smoke=_smoke,
    suite=one_run("dmt"),
)
