"""RPBench-Auto as a benchmark mode: NPCs against a baseline, a judge playing the user and picking a winner
each round; the arena's win rates and Elo."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rpbench.flows.kit.front.registry import BenchmarkMode, one_run, smoke_run
from rpbench.flows.kit.front.run_command import RunCommand
from rpbench.samples import sample_path
from rpbench.tasks.modes.rpbench_auto.roles import ROLES


def _lines(r: dict[str, Any]) -> Iterator[str]:
    from rpbench.tasks.reports.render import fmt, fmt_interval

    for row in r.get("leaderboard", []):
        yield (f"{row['model']}: win rate {fmt(row['win rate'])}% {fmt_interval(row['ci_low'], row['ci_high'])} "
               f"against {r.get('baseline')}  character {fmt(row.get('character'))}  scene {fmt(row.get('scene'))}  "
               f"Elo {fmt(row.get('elo'))}  no winner {row.get('no_winner', 0)}  n={row['n']} failed={row['failed']}")
    if r.get("judge_asked_again"):
        yield f"judge replies asked again (unreadable): {r['judge_asked_again']}"


RPBENCH_AUTO = BenchmarkMode(
    name="rpbench-auto",
    description="RPBench-Auto: NPCs against a baseline; a judge plays the user and picks the better reply each "
                "round. Win rates and Bradley-Terry Elo with intervals.",
    roles=ROLES,
    item_table="ROUNDS",
    flows={"rpbench_auto": "rpbench_auto"},
    settings={"rpbench_auto": "RpbenchAutoSettings"},
    checks={"rpbench_auto": "check_run"},
    commands=RunCommand("rpbench-auto", _lines),
    # Two models on the two characters and two scenes of the shipped samples, two rounds each.
    smoke=smoke_run("rpbench-auto", "--character-data", str(sample_path("rpbench-auto", "characters.jsonl")),
                    "--scene-data", str(sample_path("rpbench-auto", "scenes.jsonl")), "--model",
                    "rpbench-auto-candidate", "--model", "judge", "--max-rounds", "2"),
    releases="release:RELEASE",
    arena_released="analysis:released_rows",
    suite=one_run("rpbench_auto"),
    package="rpbench.flows.modes.rpbench_auto",
    work="rpbench.tasks.modes.rpbench_auto",
)
