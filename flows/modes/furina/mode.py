"""FURINA as a benchmark mode: its spec (roles, commands' help, where its flows, report and hooks live).

Registered through the ``rpbench.modes`` entry point in pyproject.toml. This
module imports nothing heavy: everything it names loads when it is used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rpbench.flows.kit.front.registry import BenchmarkMode, SmokeStep, SuitePart, with_models
from rpbench.flows.kit.front.run_command import Commands, FlowCommand, Group
from rpbench.samples import sample_path
from rpbench.tasks.modes.furina.roles import ROLES


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


def _suite(section: Mapping[str, Any], models: Sequence[str], folder: Path) -> list[SuitePart]:
    """In a suite: the evaluation of the suite's models on a benchmark, either one built already (``bench``: its
    folder) or one the suite builds first (``build``: the build's settings, with ``pool``: a pool's settings to
    build it from books, unless ``build`` names a pool folder). ``eval``: more settings of the evaluation."""
    rest = dict(section)
    bench, pool, build = rest.pop("bench", None), rest.pop("pool", None), rest.pop("build", None)
    evaluation = rest.pop("eval", {})
    if rest:
        raise ValueError(f"unknown key '{sorted(rest)[0]}' (use bench, or build with pool; and eval)")
    for key, value in (("pool", pool), ("build", build), ("eval", evaluation)):
        if value is not None and not isinstance(value, Mapping):
            raise ValueError(f"'{key}' must be a table ([furina.{key}]) of its settings")
    if bench is not None and not isinstance(bench, str):
        raise ValueError("'bench' must be a benchmark folder's path")
    if (bench is None) == (build is None):
        raise ValueError("give 'bench' (a benchmark folder built already) or a [build] table, one of the two")
    if pool is not None and build is None:
        raise ValueError("a [pool] table builds the pool of a [build]: give [build] too")
    if "bench" in evaluation:
        raise ValueError("[eval] 'bench': name the benchmark folder as 'bench' of the furina table")
    parts = []
    if build is not None:
        if pool is not None:
            if "pool" in build:
                raise ValueError("[build] names a pool folder and a [pool] table builds one: give one of the two")
            parts.append(SuitePart("build-pool", pool, "pool"))
            build = {**build, "pool": str(folder / "pool")}
        parts.append(SuitePart("build-benchmark", build, "bench"))
        bench = str(folder / "bench")
    parts.append(SuitePart("evaluate", {**with_models(evaluation, "models", models), "bench": bench}, "eval",
                           scored=True))
    return parts


FURINA = BenchmarkMode(
    name="furina",
    description="FURINA-Builder and FURINA-Bench: books to a scene pool, director-driven simulation with DWRS, "
                "source-vs-base selection, both-order judging, hallucination checks.",
    roles=ROLES,
    item_table="ITEM_SCORES",
    report=".evaluation.analysis:REPORT",
    score=".evaluation.analysis:scored",
    report_stage="eval-report",
    flows={"build-pool": "pool:build_pool", "synthesize-characters": "characters:synthesize_characters",
           "build-benchmark": "build:build_benchmark", "evaluate": "evaluate:evaluate", "demo": "demo:demo"},
    checks={"build-pool": "check_books", "synthesize-characters": "check_synthesis", "build-benchmark": "check",
            "evaluate": "check_models"},
    settings={"build-pool": "PoolSettings", "synthesize-characters": "SynthesisSettings",
              "build-benchmark": "BuildSettings", "evaluate": "EvalSettings"},
    commands=Commands("furina", {
        "pool": Group("Turn books into a pool of ready scenes; inspect chunking; add your own scenes.", {
            "chunk": "commands:chunk_command", "build": FlowCommand("build-pool", "commands:pool_lines", "pool"),
            "add": "commands:pool_add"}),
        "characters": Group("Test characters: check files of profiles; synthesize original ones.", {
            "check": "commands:characters_check",
            "synthesize": FlowCommand("synthesize-characters", "commands:synthesis_lines", "synthesis")}),
        "build": FlowCommand("build-benchmark", "commands:build_lines", "build"),
        "export": "commands:export",
        "eval": FlowCommand("evaluate", section="evaluation"),
        "validate": "commands:validate",
        "demo": "commands:demo_command"}),
    # FURINA's commands: `rpbench furina ...`, and at the top level of `rpbench` as aliases for one release
    # (they were there before the other modes came).
    top_commands={
        "pool": "Turn books into a pool of ready scenes; inspect chunking; add your own scenes.",
        "characters": "Test characters: check files of profiles; synthesize original ones.",
        "build": "Simulate dialogues (director, DWRS, source vs base judged), keep winning turns as benchmark "
                 "items.",
        "export": "Write a shareable dataset (items) with a dataset card (schema, counts, models, config).",
        "eval": "Evaluate models: answers, judgments in both orders (role `judge`), hallucination checks (role "
                "`checker`).",
        "validate": "Compare the judge with human annotators: dimension accuracy, Pearson r per dimension, "
                    "agreement.",
        "demo": "The whole pipeline on the embedded local model (no keys, no network): pool, benchmark, "
                "evaluation.",
    },
    smoke=_smoke,
    suite=_suite,
    annotation={"dimension": "annotation:DIMENSION", "pairwise": "annotation:PAIRWISE"},
    training_data="training:BENCHMARKS",
    schedules="schedules:schedules",
)
