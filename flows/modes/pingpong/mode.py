"""PingPong as a benchmark mode: user emulation, several judges, length-normalised scores."""

from __future__ import annotations

from pathlib import Path

from rpbench.flows.kit.front.registry import BenchmarkMode, SmokeStep, one_run
from rpbench.flows.kit.front.run_command import Commands, FlowCommand
from rpbench.samples import sample_path
from rpbench.tasks.modes.pingpong.roles import ROLES


def _smoke(work: Path) -> list[SmokeStep]:
    """Two players, two judges, one character per language in two situations, then a third judge."""
    settings = str(sample_path("pingpong", "settings.yaml"))
    out = work / "pingpong"
    return [
        SmokeStep("pingpong", ("pingpong", "run", "--settings", settings, "--model", "player", "--model",
                               "interrogator", "--judge", "pingpong-judge", "--judge", "judge", "--max-turns", "2",
                               "--character", "Captain Mirela Voss", "--character", "林晚照",
                               "--out", str(out), "--resamples", "200"), out),
        SmokeStep("pingpong-rejudge", ("pingpong", "rejudge", str(out), "--judge", "tester",
                                       "--resamples", "200"), out),
    ]



PINGPONG = BenchmarkMode(
    name="pingpong",
    description="PingPong: an emulated user talks to each player over character cards and situations; several "
                "judges score every turn (in character, entertaining, fluency, refusals); length-normalised.",
    roles=ROLES,
    item_table="CONVERSATION_SCORES",
    flows={"pingpong": "pingpong", "pingpong-rejudge": "rejudge"},
    settings={"pingpong": "PingPongSettings", "pingpong-rejudge": "RejudgeSettings"},
    checks={"pingpong": "check_run", "pingpong-rejudge": "check_rejudge"},
    commands=Commands("pingpong", {"run": FlowCommand("pingpong", "commands:lines"),
                                   "rejudge": FlowCommand("pingpong-rejudge", "commands:lines", "pingpong"),
                                   "agreement": "commands:agreement"}),
    smoke=_smoke,
    releases="release:RELEASE",
    suite=one_run("pingpong"),
    annotation={"pingpong": "annotation:CONVERSATION"},
)
