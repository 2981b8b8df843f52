"""A leaderboard over several runs' battles (``rpbench leaderboard``): one Bradley-Terry fit over every battle
against the same baseline, written as Parquet, Markdown and a page. Reading a run costs no call: adding a run
adds its models' rows and refits."""

from __future__ import annotations

import glob
from collections.abc import Callable, Sequence
from pathlib import Path

from rpbench.storage.tables import read_records, write_records
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.reports.arena import (
    ALL,
    ARENA,
    BATTLES,
    ArenaBattle,
    ArenaRow,
    arena_chart,
    arena_markdown,
    arena_rows,
    same_field,
)

WHAT = {"benchmark": "benchmarks", "version": "benchmark versions", "baseline": "baselines", "judge": "judges"}


def run_folders(given: Sequence[str]) -> list[Path]:
    """Each argument as run folders: a run folder (it holds battles.parquet), a folder of such runs, or a glob."""
    out: list[Path] = []
    for arg in given:
        matched = sorted(glob.glob(arg)) if any(c in arg for c in "*?[") else [arg]
        if not matched:
            raise InputError(f"{arg}: matches no folder")
        for m in matched:
            path = Path(m)
            if (path / BATTLES.filename).is_file():
                out.append(path)
            elif path.is_dir() and (inner := sorted(p.parent for p in path.glob(f"*/{BATTLES.filename}"))):
                out += inner
            elif not path.exists():
                raise InputError(f"{path}: no such run folder")
            else:
                raise InputError(f"{path}: no {BATTLES.filename} in it or its folders (runs of a benchmark that judges "
                                 "pairs write one: rpbench-auto, furina eval)")
    seen: set[Path] = set()
    return [p for p in out if not (p.resolve() in seen or seen.add(p.resolve()))]  # type: ignore[func-returns-value]


def read_battles(folders: Sequence[Path]) -> list[ArenaBattle]:
    """Every run's battles, each named by its folder; runs that cannot share one table are refused in one line
    saying what differs, and a model under test in two runs is refused (its battles would count twice)."""
    battles: list[ArenaBattle] = []
    by_run: dict[Path, list[ArenaBattle]] = {}
    for folder in folders:
        found = [b.model_copy(update={"run": str(folder)}) for b in read_records(folder / BATTLES.filename, BATTLES)]
        if not found:
            raise InputError(f"{folder / BATTLES.filename}: no battles (the run judged nothing)")
        by_run[folder] = found
        battles += found
    differs = same_field(battles)
    if differs:
        name, values = differs
        first = {v: next(str(f) for f, bs in by_run.items() if str(getattr(bs[0], name)) == v) for v in values}
        shown = "; ".join(f"{first[v]}: {v}" for v in values)
        raise InputError(f"the runs have different {WHAT[name]} ({shown}): a leaderboard fits runs of one "
                         f"{name}; make one leaderboard each")
    owner: dict[str, Path] = {}
    for folder, bs in by_run.items():
        for model in sorted({b.candidate for b in bs}):
            if model in owner:
                raise InputError(f"{model} is the model under test in {owner[model]} and in {folder}: its battles "
                                 "would count twice; give one of the runs")
            owner[model] = folder
    return battles


Released = Callable[[str, str], list[ArenaRow]]


def leaderboard(battles: Sequence[ArenaBattle], resamples: int = 1000, seed: int = 0,
                released: Released | None = None) -> list[ArenaRow]:
    """The fitted rows of every model over ``battles`` (``read_battles``), and the benchmark's released rows."""
    rows = arena_rows(battles, resamples, seed)
    if released is not None:
        rows += released(battles[0].baseline, battles[0].judge)
    return rows


def write_leaderboard(rows: Sequence[ArenaRow], battles: Sequence[ArenaBattle], out: Path,
                      folders: Sequence[Path]) -> dict[str, str]:
    """leaderboard.parquet (every slice), leaderboard.md and leaderboard.html into ``out``."""
    from rpbench.tasks.reports.page import Block, html_page, markdown_html
    from rpbench.tasks.reports.spec import Chart

    out.mkdir(parents=True, exist_ok=True)
    table = write_records(out / "leaderboard.parquet", rows, ARENA)
    first = battles[0]
    intro = (f"Benchmark **{first.benchmark}** ({first.version}); baseline **{first.baseline}**; judge "
             f"**{first.judge}**. {len(battles)} battles from {len(folders)} runs: "
             + ", ".join(f"`{f}`" for f in folders) + ". Win rate over decisive battles against the baseline; Elo "
             "by Bradley-Terry maximum likelihood (400, base 10, mean 1000); 95% intervals by a bootstrap over "
             "dialogues.")
    slices = sorted({(r.subset, r.language) for r in rows if not r.released},
                    key=lambda s: (s != (ALL, ALL), s))
    parts, blocks = [f"# Leaderboard\n\n{intro}\n"], []
    for subset, language in slices:
        title = "all battles" if (subset, language) == (ALL, ALL) else \
            f"subset {subset}" if language == ALL else f"language {language}"
        md = arena_markdown(rows, subset, language)
        parts.append(f"## {title}\n\n{md}\n")
        chart = arena_chart([r for r in rows if r.subset == subset and r.language == language], f"Elo, {title}")
        blocks.append(Block(title, markdown_html(md), [Chart(chart, f"Elo, {title}")] if chart else []))
    (out / "leaderboard.md").write_text("\n".join(parts), encoding="utf-8")
    (out / "leaderboard.html").write_text(html_page("Leaderboard", intro, blocks), encoding="utf-8")
    return {"table": str(table), "markdown": str(out / "leaderboard.md"), "page": str(out / "leaderboard.html")}
