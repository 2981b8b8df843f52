"""DMT-RoleBench's `rpbench dmt agreement` (its `run` is the kit's RunCommand)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.reports.render import fmt


def agreement(
    labels_file: Annotated[Path, typer.Option(
        "--labels", help="Human labels: CSV or JSONL with model, dialogue_id, round, metric, label (good/bad), "
                         "optionally annotator.")],
    run_dir: Annotated[Path, typer.Option("--run", help="A DMT run folder (from `rpbench dmt run`).")],
) -> None:
    """The judge against people, per metric: consistency rate, good-case recall, bad-case recall."""
    import json

    from rpbench.storage.tables import atomic_write_bytes, read_records
    from rpbench.tasks.modes.dmt.agreement import agreement as compute
    from rpbench.tasks.modes.dmt.agreement import load_human_labels
    from rpbench.tasks.modes.dmt.tables import LABELS

    human, ties = load_human_labels(labels_file)
    table = run_dir / LABELS.filename
    if not table.is_file():
        raise InputError(f"{run_dir}: no {LABELS.filename} (run `rpbench dmt run` into it first)")
    result = compute(human, read_records(table, LABELS), labels_file)
    lines = ["| metric | n | consistency | good recall | bad recall |", "|---|---|---|---|---|"]
    lines += [f"| {r['metric']} | {r['n']} | {fmt(r['consistency'], 3)} | {fmt(r['good_recall'], 3)} | "
              f"{fmt(r['bad_recall'], 3)} |" for r in result]
    md = "# DMT-RoleBench: the judge against people\n\n" + "\n".join(lines) + \
        f"\n\nRounds left out because annotators tied: {ties}.\n"
    atomic_write_bytes(run_dir / "agreement.md", md.encode("utf-8"))
    atomic_write_bytes(run_dir / "agreement.json", json.dumps({"metrics": result, "ties": ties}, indent=2).encode())
    typer.echo(md)
    typer.echo(f"written: {run_dir / 'agreement.md'} and agreement.json")
