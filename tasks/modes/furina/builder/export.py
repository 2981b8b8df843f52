"""A shareable dataset from a benchmark folder: items as JSONL or Parquet, plus a dataset card."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from rpbench.storage.runs import RunDir
from rpbench.storage.tables import atomic_write_bytes, read_rows, read_table, run_table, write_table
from rpbench.tasks.modes.furina.dimensions import DIMENSIONS
from rpbench.tasks.modes.furina.tables import ITEMS


def dataset_card(items: list[dict[str, Any]], manifest: dict[str, Any], fmt: str) -> str:
    per_dim = Counter(i["dimension"] for i in items)
    per_lang = Counter(i["language"] for i in items)
    models = sorted({i["source_model"] for i in items if i["source_model"]})
    lines = [
        "# rpbench benchmark dataset", "",
        f"{len(items)} items from {len({i['dialogue_id'] for i in items})} dialogues, "
        f"{len({i['character'] for i in items})} test characters.", "",
        "| dimension | items |", "|---|---|", *[f"| {d} | {per_dim.get(d, 0)} |" for d in DIMENSIONS], "",
        "| language | items |", "|---|---|", *[f"| {k} | {v} |" for k, v in sorted(per_lang.items())], "",
        f"Source models: {', '.join(models) or '-'}", "",
        "## Schema", "", "| column | type |", "|---|---|",
        *[f"| {f.name} | {f.type} |" for f in ITEMS.schema], "",
        f"Format: {fmt}. Each item is a dialogue position (`history`) paired with the one dimension it tests; "
        "`test_utterance` won against `base_utterance` (sigma < 3 on the 1-5 scale, 1 = strong preference for it).",
        "", "## Build configuration", "", "```json",
        json.dumps({k: manifest.get(k) for k in ("build_settings", "config", "models")}, indent=2, ensure_ascii=False),
        "```", "",
    ]
    return "\n".join(lines)


def export_benchmark(bench: str | Path, out: str | Path, fmt: str) -> Path:
    bench, out = Path(bench), Path(out)
    # Read (and checked) before anything is made; a folder with no items is told which command makes them.
    items = read_rows(run_table(bench, ITEMS, "rpbench furina build"), ITEMS)
    out.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        text = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)
        atomic_write_bytes(out / "items.jsonl", text.encode("utf-8"))
    else:
        write_table(out / "items.parquet", read_table(bench / ITEMS.filename, ITEMS), ITEMS)
    card = dataset_card(items, RunDir(bench).read_manifest(), fmt)
    atomic_write_bytes(out / "README.md", card.encode("utf-8"))
    return out
