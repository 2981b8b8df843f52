"""FURINA as a benchmark mode: its roles, metrics, report additions, flows and commands.

Registered through the ``rpbench.modes`` entry point in pyproject.toml. Its
flows load on demand, so `rpbench --help` does not import the pipeline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rpbench.flows.kit.registry import BenchmarkMode, SmokeStep
from rpbench.flows.modes.furina.commands import add_commands
from rpbench.samples import sample_path
from rpbench.storage.schemas import ITEMS, SCENES
from rpbench.tasks.modes.furina.evaluation.analysis import REPORT
from rpbench.tasks.modes.furina.roles import ROLES
from rpbench.tasks.modes.furina.tables import ITEM_SCORES


def _flows() -> dict[str, Any]:
    from rpbench.flows.modes.furina.build import build_benchmark
    from rpbench.flows.modes.furina.characters import synthesize_characters
    from rpbench.flows.modes.furina.demo import demo
    from rpbench.flows.modes.furina.evaluate import evaluate
    from rpbench.flows.modes.furina.pool import build_pool

    return {"build-pool": build_pool, "synthesize-characters": synthesize_characters,
            "build-benchmark": build_benchmark, "evaluate": evaluate, "demo": demo}


def _smoke(work: Path) -> list[SmokeStep]:
    """Every FURINA flow on the shipped samples, at the smallest sizes that still run each stage."""
    book = sample_path("books", "the_keepers_ledger.en.txt")
    return [
        SmokeStep("pool", ("pool", "build", str(book), "--out", str(work / "pool"), "--target-tokens", "1024",
                           "--min-tokens", "512", "--max-tokens", "2048"), work / "pool"),
        SmokeStep("pool-add", ("pool", "add", str(sample_path("scenes", "harbour_night.en.yaml")),
                               "--pool", str(work / "scenes"), "--new"), work / "scenes", uses_models=False),
        SmokeStep("synthesize", ("characters", "synthesize", "--out", str(work / "synth" / "chars.yaml"),
                                 "--run-dir", str(work / "synth"), "--n", "2", "--max-refine", "0"),
                  work / "synth"),
        SmokeStep("build", ("build", "--characters", str(sample_path("characters", "starter.en.yaml")),
                            "--only", "Elizabeth Bennet", "--pool", str(work / "scenes"), "--out",
                            str(work / "bench"), "--threshold", "1", "--budget", "2", "--wave-size", "2",
                            "--max-rounds", "4"), work / "bench"),
        SmokeStep("eval", ("eval", "--bench", str(work / "bench"), "--model", "test", "--model", "source",
                           "--out", str(work / "eval"), "--resamples", "200"), work / "eval"),
    ]


FURINA = BenchmarkMode(
    name="furina",
    description="FURINA-Builder and FURINA-Bench: books to a scene pool, director-driven simulation with DWRS, "
                "source-vs-base selection, both-order judging, hallucination checks.",
    roles=ROLES,
    item_table=ITEM_SCORES,
    report=REPORT,
    flows=_flows,
    commands=add_commands,
    commands_at_top=True,
    tables=(SCENES, ITEMS, ITEM_SCORES),
    smoke=_smoke,
)
