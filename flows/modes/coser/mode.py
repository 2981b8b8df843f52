"""CoSER as a benchmark mode: given-circumstance acting in scenes from books, judged per dimension."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rpbench.flows.kit.front.registry import BenchmarkMode, one_run, smoke_run
from rpbench.flows.kit.front.run_command import RunCommand
from rpbench.samples import sample_path
from rpbench.tasks.modes.coser.roles import ROLES

DIMENSIONS = ("Storyline Consistency", "Anthropomorphism", "Character Fidelity", "Storyline Quality")


def _lines(r: dict[str, Any]) -> Iterator[str]:
    from rpbench.tasks.reports.render import fmt

    for row in r.get("leaderboard", []):
        dims = "  ".join(f"{d} {fmt(row.get(d), 1)}" for d in DIMENSIONS)
        yield (f"{row['model']}: avg {fmt(row['avg'], 2)} [{fmt(row['ci_low'], 2)}, {fmt(row['ci_high'], 2)}]  "
               f"{dims}  BLEU {fmt(row.get('BLEU'), 4)}  ROUGE-L {fmt(row.get('ROUGE-L'), 4)}  n={row['n']} "
               f"failed={row['failed']} next speakers drawn={fmt(row.get('drawn'), 0)}")
    if r.get("empty_thoughts"):
        yield f"key characters with an empty inner thought: {r['empty_thoughts']} (their actors get none)"


COSER = BenchmarkMode(
    name="coser",
    description="CoSER: given-circumstance acting; models play every character of a scene from a book, a critic "
                "lists flaws per dimension against the book's own conversation.",
    roles=ROLES,
    item_table="CIRCUMSTANCE_SCORES",
    flows={"coser": "coser"},
    settings={"coser": "CoserSettings"},
    checks={"coser": "check_run"},
    commands=RunCommand("coser", _lines),
    annotation={"coser": "annotation:SCENE"},
    # Two models act the shipped circumstances (one book seen in training, one not).
    smoke=smoke_run("coser", "--data", str(sample_path("coser", "example.json")), "--model", "coser-actor",
                    "--model", "judge"),
    releases="release:RELEASE",
    suite=one_run("coser"),
)
