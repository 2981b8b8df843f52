"""CharacterBench as a benchmark mode: one reply in character per item, judged on one of thirteen dimensions."""

from __future__ import annotations

from rpbench.flows.kit.front.registry import BenchmarkMode, one_run, smoke_run
from rpbench.flows.kit.front.run_command import RunCommand
from rpbench.samples import sample_path
from rpbench.tasks.modes.characterbench.roles import ROLES

# Two models reply to the shipped items of three dimensions, and the judge scores them.
SMOKE = smoke_run("characterbench", *(a for name in ("memory_consistency", "engagement", "fact_accuracy")
                                      for a in ("--data", str(sample_path("characterbench", f"{name}_test.json")))),
                  "--model", "characterbench-player", "--model", "judge")


CHARACTERBENCH = BenchmarkMode(
    name="characterbench",
    description="CharacterBench: a reply in character to each item's last user turn, judged on the item's "
                "dimension (memory, facts, boundaries, attributes, behaviour, emotions, morality, human "
                "likeness, engagement); the judge checked against the released human scores.",
    roles=ROLES,
    item_table="ITEM_SCORES",
    flows={"characterbench": "characterbench"},
    settings={"characterbench": "CharacterBenchSettings"},
    checks={"characterbench": "check_run"},
    commands=RunCommand("characterbench"),
    annotation={"characterbench": "annotation:REPLY"},
    smoke=SMOKE,
    releases="release:RELEASE",
    # In a suite the judge also scores the released replies, so the suite shows it against people.
    suite=one_run("characterbench", defaults={"judge_released": True}),
)
