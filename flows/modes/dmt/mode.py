"""DMT-RoleBench as a benchmark mode: dialogues steered by topic and intent, per-round binary labels, DMT-Score."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rpbench.flows.kit.front.registry import BenchmarkMode, one_run, smoke_run
from rpbench.flows.kit.front.run_command import RunCommand
from rpbench.samples import sample_path
from rpbench.tasks.modes.dmt.roles import ROLES


def _lines(d: dict[str, Any]) -> Iterator[str]:
    from rpbench.tasks.reports.render import fmt

    yield f"dialogues per model: {d.get('dialogues')}; short dialogues: policy '{d.get('policy')}'"
    for r in d.get("leaderboard", []):
        yield (f"{r['model']}: DMT-Score {fmt(r['score'])} [{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]  "
               f"mean of metrics {fmt(r.get('metric_mean'))}  n={r['n']} failed={r['failed']}")
    for model, curve in d.get("round_curve", {}).items():
        yield f"{model} by rounds: " + "  ".join(f"{t}:{fmt(v)}" for t, v in enumerate(curve, 1))


DMT = BenchmarkMode(
    name="dmt",
    description="DMT-RoleBench: a generator steers multi-turn dialogues by topic and intent; each round is "
                "labelled good/bad on the metrics of the role type; strict and lenient DMT-Scores by rounds.",
    roles=ROLES,
    item_table="DIALOGUE_SCORES",
    flows={"dmt": "dmt"},
    settings={"dmt": "DmtSettings"},
    checks={"dmt": "check_run"},
    commands=RunCommand("dmt", _lines, more={"agreement": "commands:agreement"}),
    # Two models, one English and one Chinese seed, two formats, three rounds.
    smoke=smoke_run("dmt", "--seeds", str(sample_path("dmt", "seeds.yaml")), "--model", "dmt-player", "--model",
                    "dmt-judge", "--seed-id", "harbour-pilot-knowledge", "--seed-id", "sun-wukong-identity",
                    "--format", "minimalist", "--format", "detailed", "--max-rounds", "3"),
    suite=one_run("dmt"),
)
