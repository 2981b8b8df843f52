"""One page over several run folders: each run's outcome and leaderboard with links to its report and viewer,
and one viewer of every run's samples, where the answers of two models (or two runs) to the same item sit
side by side."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, StrictUndefined

from rpbench.storage.runs import manifest_of
from rpbench.storage.tables import atomic_write_bytes, read_parquet
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.reports.render import fmt, fmt_interval
from rpbench.tasks.reports.spec import Column
from rpbench.tasks.reports.tables import columns_shown
from rpbench.tasks.reports.viewer import VIEWER_FILE, Part, Sample, read_viewer, write_viewer

INDEX_FILE = "index.html"
SAMPLES_FILE = "samples.html"
_FIXED = ("model", "ci_low", "ci_high", "n")


@dataclass
class RunEntry:
    """What the index shows of one run folder."""

    label: str
    folder: Path
    flow: str
    status: str
    reasons: list[str]
    # The leaderboard's metric columns, the headline first, and how the run's report showed them (digits,
    # scale, unit; none in a folder written before the leaderboard kept them).
    columns: list[str] = field(default_factory=list)
    shown: dict[str, Column] = field(default_factory=dict)
    board: list[dict[str, Any]] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    benchmark: str = ""


def _labels(folders: Sequence[Path]) -> list[str]:
    """Short names for the folders: their own names, or their paths below a common parent when names repeat."""
    names = [f.name for f in folders]
    if len(set(names)) == len(names):
        return names
    common = Path(os.path.commonpath([str(f) for f in folders]))
    return [str(f.relative_to(common)) or f.name for f in folders]


def read_run(folder: Path, label: str) -> RunEntry:
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder" if not folder.exists() else f"{folder}: a file, not a run folder")
    manifest = manifest_of(folder)
    if manifest is None:
        raise InputError(f"{folder}: not a run folder (no manifest.json in it)")
    outcome: dict[str, Any] = manifest["outcome"] if isinstance(manifest.get("outcome"), dict) else {}
    reasons = outcome.get("reasons")
    entry = RunEntry(label=label, folder=folder, flow=str(manifest.get("flow", "?")),
                     status=str(outcome.get("status", "unknown")),
                     reasons=[str(r) for r in reasons] if isinstance(reasons, list) else [])
    board = folder / "leaderboard.parquet"
    if board.is_file():
        table = read_parquet(board)
        entry.columns = [c for c in table.column_names if c not in _FIXED]
        entry.shown = {c.key: c for c in columns_shown(table) or ()}
        entry.board = table.to_pylist()
    viewer = folder / VIEWER_FILE
    if viewer.is_file():
        try:
            data = read_viewer(viewer)
        except (ValueError, json.JSONDecodeError) as exc:
            raise InputError(f"{viewer}: {exc}") from None
        entry.samples, entry.benchmark = data["samples"], str(data["title"]).split(":")[0]
    return entry


def merged_samples(runs: Sequence[RunEntry]) -> list[Sample]:
    """Every run's samples in one list. With several runs, a sample's model is named with its run, and an item
    is keyed by its benchmark, so the same item of the same benchmark lines up across runs."""
    several = len(runs) > 1
    out = []
    for run in runs:
        for s in run.samples:
            model = f"{s['model']} @ {run.label}" if several else s["model"]
            facets = {k: v for k, v in s["facets"].items() if k != "model"}
            out.append(Sample(id=f"{run.label}/{s['id']}" if several else s["id"],
                              item=f"{run.benchmark}/{s['item']}", model=model, title=s["title"], score=s["score"],
                              parts=[Part(**p) for p in s["parts"]],
                              facets={"run": run.label, "benchmark": run.benchmark, **facets} if several else facets))
    return out


_PAGE = Environment(undefined=StrictUndefined, autoescape=True).from_string(
    """<!doctype html>
<html><head><meta charset="utf-8"><title>rpbench runs</title>
<style>body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:6px 0 18px 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}
td.num{text-align:right;font-variant-numeric:tabular-nums}.failed{color:#b00020;font-weight:600}
.muted{color:#666;font-size:13px}</style></head><body>
<h1>rpbench runs</h1>
<p>{{ runs | length }} run folder(s).{% if samples %} Every sample of every run, with the answers to the same item
side by side: <a href="{{ samples_file }}">{{ samples_file }}</a> ({{ samples }} samples).{% endif %}</p>
<table><tr><th>run</th><th>flow</th><th>outcome</th><th>links</th></tr>
{% for r in runs %}<tr><td><a href="#{{ r.anchor }}">{{ r.label }}</a></td><td>{{ r.flow }}</td>
<td class="{{ 'failed' if r.status == 'failed' else '' }}">{{ r.status }}{% for why in r.reasons %}<br>
<span class="muted">{{ why }}</span>{% endfor %}</td>
<td>{% for name, href in r.links %}<a href="{{ href }}">{{ name }}</a> {% endfor %}</td></tr>
{% endfor %}</table>
{% for r in runs %}<h2 id="{{ r.anchor }}">{{ r.label }} <span class="muted">({{ r.folder }})</span></h2>
{% if r.board %}<table><tr><th>model</th>{% for h in r.headings %}<th>{{ h }}</th>{% endfor %}<th>95% CI</th>
<th>n</th></tr>
{% for row in r.board %}<tr><td>{{ row.model }}</td>{% for cell in row.cells %}<td class="num">{{ cell }}</td>
{% endfor %}<td class="num">{{ row.ci }}</td><td class="num">{{ row.n }}</td></tr>
{% endfor %}</table>{% else %}<p class="muted">No leaderboard in this folder.</p>{% endif %}
{% endfor %}</body></html>
""")


def _check_folders(runs: Sequence[Path], out: Path) -> None:
    """Folders a page can name and link to: every name UTF-8 (a page is UTF-8 text), each run given once."""
    for path in [*runs, out]:
        try:
            str(path).encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(path).decode("utf-8", "replace")
            raise InputError(f"{shown}: the folder's name is not UTF-8, so a page cannot name or link it; "
                             "rename it") from None
    seen: dict[Path, Path] = {}
    for path in runs:
        first = seen.setdefault(path.resolve(), path)
        if first is not path:
            raise InputError(f"{path}: given twice{f' (as {first})' if str(first) != str(path) else ''}; "
                             "name each run once")


def _relative(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()


def _cell(value: Any, column: Column | None) -> str:
    """A leaderboard value as the run's own report shows it (its digits and scale), or to one decimal."""
    return fmt(value) if column is None else fmt(column.shown(value), column.digits, column.missing)


def write_index(folders: Sequence[str | Path], out: str | Path) -> dict[str, Path]:
    """``index.html`` and, when the runs have samples, ``samples.html`` under ``out``; returns their paths."""
    out = Path(out)
    paths = [Path(f) for f in folders]
    _check_folders(paths, out)
    runs = [read_run(f, label) for f, label in zip(paths, _labels(paths), strict=True)]
    shown = []
    for n, r in enumerate(runs):
        links = [(name, _relative(r.folder / name, out)) for name in ("report.html", VIEWER_FILE)
                 if (r.folder / name).is_file()]
        head = r.shown.get(r.columns[0]) if r.columns else None
        board = [{"model": row["model"], "n": row.get("n", ""),
                  "ci": fmt_interval(row.get("ci_low"), row.get("ci_high"), head.digits if head else 1, " to ")
                  if r.columns else "",
                  "cells": [_cell(row.get(c), r.shown.get(c)) for c in r.columns]} for row in r.board]
        headings = [r.shown[c].heading if c in r.shown else c for c in r.columns]
        shown.append({"label": r.label, "anchor": f"run-{n}", "folder": str(r.folder), "flow": r.flow,
                      "status": r.status, "reasons": r.reasons, "links": links, "headings": headings,
                      "board": board})
    written: dict[str, Path] = {}
    samples = merged_samples(runs)
    if samples:
        written["samples"] = write_viewer(out, "rpbench runs: samples", samples, {"all runs": INDEX_FILE},
                                          name=SAMPLES_FILE)
    html = _PAGE.render(runs=shown, samples=len(samples), samples_file=SAMPLES_FILE)
    atomic_write_bytes(out / INDEX_FILE, html.encode("utf-8"))
    written["index"] = out / INDEX_FILE
    return written
