"""What every command that holds a judge against people does once its mode has paired the two: the run's
table checked, the judge's model read from the run's manifest, and the result written the same way
everywhere: ``<stem>.md`` and ``<stem>.json`` with the mode's own measures (its paper's), and
``agreement.parquet``, the table reports and `rpbench suite` read (Pearson, Spearman, Kendall's tau-b and
exact agreement with bootstrap intervals, per judge, group and language)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import typer

from rpbench.storage.schemas import AGREEMENT
from rpbench.storage.tables import atomic_write_bytes, write_table
from rpbench.tasks.core.records import JudgeAgreement
from rpbench.tasks.reports.judges import judge_agreement_lines


def recorded_model(run: Path, role: str) -> str:
    """The model the run's manifest recorded for ``role`` (the role's own name when it recorded none)."""
    manifest = run / "manifest.json"
    config = json.loads(manifest.read_text("utf-8")).get("config", {}) if manifest.is_file() else {}
    bound = (config.get("roles") or {}).get(role) or config.get("default") or {}
    return str(bound.get("model") or role)


def publish_agreement(run: Path, stem: str, markdown: str, details: Mapping[str, Any],
                      rows: Sequence[JudgeAgreement]) -> None:
    """Write the mode's report of the comparison and the shared table, and print both."""
    shared = judge_agreement_lines(rows)
    if shared:
        markdown = markdown.rstrip("\n") + ("\n\n## The judge against people, as every benchmark reports it\n\n"
                                            "95% bootstrap intervals over items.\n\n") + "\n".join(shared) + "\n"
    atomic_write_bytes(run / f"{stem}.md", markdown.encode("utf-8"))
    atomic_write_bytes(run / f"{stem}.json", json.dumps({**details, "judges": [r.model_dump() for r in rows]},
                                                        indent=2, default=str).encode("utf-8"))
    write_table(run / AGREEMENT.filename, [r.model_dump() for r in rows], AGREEMENT)
    typer.echo(markdown)
    typer.echo(f"written: {run / f'{stem}.md'}, {stem}.json and {AGREEMENT.filename}")
