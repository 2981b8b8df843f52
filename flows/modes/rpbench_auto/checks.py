"""RPBench-Auto's input checks, run once per run (``checked``): Prefect-free, so a bad file or name is one line."""

from __future__ import annotations

from dataclasses import dataclass

from rpbench.flows.kit.front.systems import System, evaluation_systems, judge_role
from rpbench.flows.modes.rpbench_auto.settings import RpbenchAutoSettings
from rpbench.prompts.releases import require
from rpbench.tasks.modes.rpbench_auto.dialogue import load_items
from rpbench.tasks.modes.rpbench_auto.release import RELEASE


@dataclass(frozen=True)
class Inputs:
    systems: list[System]  # the candidates
    judge: str  # the judge's role
    baseline: str  # the baseline's role
    items: dict[str, int]  # subset -> how many items the run covers


def data_of(s: RpbenchAutoSettings, subset: str) -> str | None:
    return s.character_data if subset == "character" else s.scene_data


def check_run(s: RpbenchAutoSettings) -> Inputs:
    """Every input error before any call: the release's files, each subset's data, the candidates, the judge and
    the baseline."""
    require([RELEASE])  # every word a round sends comes from RPBench-Auto's code
    items = {subset: len(load_items(subset, data_of(s, subset))[:s.limit])  # type: ignore[arg-type]
             for subset in s.subsets}
    systems = evaluation_systems(s, "rpbench-auto-candidate", reserved={s.baseline: "the baseline (--baseline)"})
    judge = judge_role(s, s.judge, like="rpbench-auto-judge")
    baseline = judge_role(s, s.baseline, like="rpbench-auto-baseline", option="--baseline")
    return Inputs(systems, judge, baseline, items)
