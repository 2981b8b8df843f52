"""What RoleLLM's commands print about their runs (the commands themselves are the kit's, from the spec)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rpbench.flows.kit.commands.settings_commands import leaderboard_lines
from rpbench.tasks.reports.render import fmt


def eval_lines(r: dict[str, Any]) -> Iterator[str]:
    for split, models in r.get("by_split", {}).items():
        for model, cells in models.items():
            yield f"{split} {model}: " + "  ".join(f"{k} {fmt(v, 1)}" for k, v in cells.items())
    yield from leaderboard_lines(r, "avg")
    for judge, systems in (r.get("win_rates") or {}).items():
        yield f"judge {judge}: " + "  ".join(f"{m} win rate {fmt(v['win_rate'], 1)}" for m, v in systems.items())


def _files(section: dict[str, Any], out: str) -> Iterator[str]:
    yield from (f"{out}/{rel}: {n} rows" for rel, n in section.get("files", {}).items())


def context_instruct_lines(c: dict[str, Any], s: Any) -> Iterator[str]:
    if c.get("left_out"):
        yield f"left out (fewer than {s.min_turns} turns of their own): {', '.join(c['left_out'])}"
    yield from (f"{role}: " + ", ".join(f"{k} {v}" for k, v in counts.items())
                for role, counts in c.get("counts", {}).items())
    yield from _files(c, s.out)
    yield from c.get("notes", [])


def general_lines(g: dict[str, Any], s: Any) -> Iterator[str]:
    yield f"instructions: {g.get('instructions')}; answers: " + ", ".join(f"{k} {v}" for k, v in
                                                                          g.get("counts", {}).items())
    yield from _files(g, s.out)
    yield f"{s.out}/raw.jsonl: the RAW references (rpbench rolellm eval --raw)"


def profile_lines(p: dict[str, Any]) -> Iterator[str]:
    yield f"role file: {p.get('role_file')} (catchphrases: {', '.join(p.get('catchphrases') or []) or 'none'})"


def select_lines(r: dict[str, Any], s: Any) -> Iterator[str]:
    chosen = r.get("chosen", [])
    yield f"worth auditing: {', '.join(c for c in chosen if c) or 'none'}; table: {s.out}/selection.md"
