"""DMT-RoleBench's `rpbench dmt agreement` (its `run` is the kit's RunCommand)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def agreement(
    labels_file: Annotated[Path, typer.Option(
        "--labels", help="Human labels: CSV or JSONL with model, dialogue_id, round, metric, label (good/bad), "
                         "optionally annotator.")],
    run_dir: Annotated[Path, typer.Option("--run", help="A DMT run folder (from `rpbench dmt run`).")],
) -> None:
    """The judge against people, per metric: consistency rate, good-case recall, bad-case recall; and the
    measures every benchmark reports (agreement.parquet)."""
    from rpbench.flows.kit.front.agreement import publish_agreement, recorded_model
    from rpbench.storage.tables import read_records, run_records
    from rpbench.tasks.modes.dmt.agreement import agreement as compute
    from rpbench.tasks.modes.dmt.agreement import (
        agreement_markdown,
        describe,
        judge_rows,
        load_human_labels,
        unjudged,
    )
    from rpbench.tasks.modes.dmt.tables import DIALOGUE_SCORES, LABELS

    human, ties = load_human_labels(labels_file)
    labels = run_records(run_dir, LABELS, "rpbench dmt run")
    result = compute(human, labels, labels_file)
    scores = run_dir / DIALOGUE_SCORES.filename
    languages = {d.dialogue_id: d.language for d in read_records(scores, DIALOGUE_SCORES)} if scores.is_file() else {}
    rows = judge_rows(human, labels, recorded_model(run_dir, "dmt-judge"), languages)
    left_out = unjudged(human, labels)
    if left_out:
        typer.echo(f"note: {len(left_out)} of {len(human)} labelled rounds were not judged in this run and are left "
                   f"out (first: {describe(left_out[0])})", err=True)
    publish_agreement(run_dir, "agreement", agreement_markdown(result, ties, left_out),
                      {"metrics": result, "ties": ties, "left_out": len(left_out)}, rows)
