"""FURINA as a benchmark mode: its roles, metrics, report additions, flows and commands.

Registered through the ``rpbench.modes`` entry point in pyproject.toml. Its
flows load on demand, so `rpbench --help` does not import the pipeline.
"""

from __future__ import annotations

from typing import Any

from rpbench.flows.kit.registry import BenchmarkMode
from rpbench.flows.modes.furina.commands import add_commands
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
)
