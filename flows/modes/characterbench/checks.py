"""CharacterBench's input checks, run once per run (``checked``): Prefect-free, so a bad file or name is one line."""

from __future__ import annotations

from rpbench.flows.kit.front.systems import System, evaluation_systems, judge_role
from rpbench.flows.modes.characterbench.settings import CharacterBenchSettings
from rpbench.prompts.releases import require
from rpbench.tasks.modes.characterbench.loader import load_items
from rpbench.tasks.modes.characterbench.release import RELEASE

RELEASED = System("released")  # neither asked nor a file: each reply under its released system's name


def check_run(s: CharacterBenchSettings) -> tuple[list[System], str, int]:
    """Every input error before any call: the files, the models, the judge and the reply files. The systems,
    the judge's role and the number of items."""
    require([RELEASE])  # its words come from the release's files: all there, or one line before anything
    released = s.judge_released or not (s.models or s.answers)
    items = load_items(s.data, [s.language], s.limit, released)
    judge = judge_role(s, s.judge, like="characterbench-judge")
    # With --judge-released the released replies sit on the leaderboard under their systems' names.
    reserved = {n: "a released system" for n in {i.reply_model for i in items} | {RELEASED.name} if n
                and s.judge_released}
    systems = evaluation_systems(s, "characterbench-player", {i.item_id: i for i in items}, "replies",
                                 reserved=reserved)
    if systems and s.judge_released:
        systems.append(RELEASED)
    return systems or [RELEASED], judge, len(items)
