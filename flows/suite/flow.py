"""The suite flow: each mode of a suite file runs as a subflow (its own run folder under the suite's, the same
models file and call cache), then one stage gathers their leaderboards into the profile.

A mode that fails does not stop the others: the profile shows what finished, names what did not, and the suite
ends Failed (exit 3). A rerun finds every finished stage of every mode cached.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from prefect import flow

from rpbench.flows.kit.front.registry import get_mode
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.running.ui import publish_markdown
from rpbench.flows.suite.plan import PlannedMode, check_suite
from rpbench.flows.suite.settings import SuiteSettings
from rpbench.storage.schemas import AGREEMENT as HUMAN_AGREEMENT
from rpbench.storage.schemas import CALLS, JUDGES
from rpbench.storage.tables import atomic_write_bytes, read_records
from rpbench.tasks.core.records import CallRecord
from rpbench.tasks.llm.planning import PlanPassedBudget
from rpbench.tasks.llm.run_context import current_run
from rpbench.tasks.reports.index import SAMPLES_FILE, merged_samples, read_run
from rpbench.tasks.reports.profile import (
    AGREEMENT,
    COMBINED,
    PROFILE,
    SUBSCORES,
    BenchmarkResult,
    agreement,
    combined,
    profile_rows,
    subscore_rows,
)
from rpbench.tasks.reports.profile_page import RunLink, profile_html, profile_markdown
from rpbench.tasks.reports.viewer import write_viewer

TITLE = "rpbench suite: model profile"


def _tables(folder: Path, mode: str) -> list[str]:
    """The files of a mode's run folder the profile reads."""
    item_table = get_mode(mode).load_item_table().filename
    return [str(folder / name) for name in ("leaderboard.parquet", "model_scores.parquet", item_table)]


def _rows(path: str) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist() if Path(path).is_file() else []


def _mode_modules(params: Mapping[str, Any]) -> list[str]:
    """The modules of every mode in the suite whose code decides its scores (report and item table)."""
    out = []
    for name in params["modes"]:
        found = get_mode(name)
        out += [ref.partition(":")[0] for ref in (found.report, found.item_table) if isinstance(ref, str)]
    return out


@stage("suite-profile", inputs=("tables",), code=_mode_modules)
async def profile(run: StageRun, models: list[str], modes: list[str], folders: list[str], statuses: list[str],
                  reasons: list[list[str]], usable: list[bool], tables: list[str], weights: dict[str, float],
                  resamples: int, seed: int, out: str) -> StageResult:
    """Every mode's leaderboard, scores and items into the profile tables, the report and one sample viewer.
    Only the suite's models are profiled (a mode may score a reference of its own beside them, as RoleLLM
    scores RoleGPT's released answers): a percentile is a standing among the models the suite was run for.
    A mode is left out when ``usable`` says its tables are not this run's (it failed before writing them)."""
    results = []
    for name, folder, status, use in zip(modes, folders, statuses, usable, strict=True):
        if not use:
            continue
        board, scores, items = ([r for r in _rows(p) if str(r.get("model")) in models]
                                for p in _tables(Path(folder), name))
        if board:
            results.append(BenchmarkResult(name, get_mode(name).load_report(), status, board, scores, items))
    # Each judge against people, wherever a benchmark of the suite had human scores (its agreement.parquet).
    judges = [a for folder, use in zip(folders, usable, strict=True)
              if use and (Path(folder) / HUMAN_AGREEMENT.filename).is_file()
              for a in read_records(Path(folder) / HUMAN_AGREEMENT.filename, HUMAN_AGREEMENT)]
    rows = profile_rows(results)
    subscores = subscore_rows(results)
    agreed = agreement(results, resamples, seed)
    weighted = combined(rows, weights) if weights else []
    run.write(PROFILE, rows, final=True)
    run.write(SUBSCORES, subscores, final=True)
    run.write(AGREEMENT, agreed.pairs, final=True)
    run.write(JUDGES, judges, final=True)
    if weighted:
        run.write(COMBINED, weighted, final=True)
    root = Path(out).resolve()
    links = [RunLink(name, status, Path(folder).resolve().relative_to(root).as_posix(), why)
             for name, folder, status, why in zip(modes, folders, statuses, reasons, strict=True)]
    models = sorted({p.model for p in rows})
    intro = (f"{len(models)} model(s) ({', '.join(models) or 'none scored'}) on {len(results)} of {len(modes)} "
             f"benchmark(s). Every sample of every benchmark: [{SAMPLES_FILE}]({SAMPLES_FILE}).")
    markdown = profile_markdown(TITLE, intro, rows, subscores, agreed, weighted, links, judges)
    html = profile_html(TITLE, intro, rows, subscores, agreed, weighted, links, {"all samples": SAMPLES_FILE},
                        judges)
    for name, text in (("report.md", markdown), ("report.html", html)):
        atomic_write_bytes(run.final_folder / name, text.encode("utf-8"))
        run.tables[name.replace(".", "_")] = str(run.final_folder / name)
    entries = [read_run(Path(f), m) for m, f in zip(modes, folders, strict=True)
               if (Path(f) / "manifest.json").is_file()]
    run.tables["samples"] = str(write_viewer(run.final_folder, "rpbench suite: samples", merged_samples(entries),
                                             {"profile": "report.html"}, name=SAMPLES_FILE))
    await publish_markdown("suite-profile", markdown, TITLE)
    least = agreed.least
    return run.result(benchmarks=len(results), models=models,
                      least_agreeing=least[0] if least else None, agreement_note=agreed.note)


def _mode_outcome(state: Any) -> tuple[str, list[str]]:
    """A mode's status, and why when it failed (the first line of its last run's state message)."""
    if state is not None and state.is_completed():
        return "ok", []
    message = str(getattr(state, "message", "") or "").strip()
    return "failed", [message.splitlines()[0] if message else "it did not finish"]


STALE = "its tables are from an earlier run, so the profile leaves it out"


def _written_since(folder: str, since: float) -> bool:
    """Whether a failed mode's leaderboard is this run's (a mode that stopped early may have left an older
    one): written after ``since``, or kept from a cached report stage by a run that reached its end (its
    manifest written since, and not by a stop), whose tables are the ones its inputs give."""
    board, manifest = Path(folder) / "leaderboard.parquet", Path(folder) / "manifest.json"
    if not board.is_file():
        return False
    if board.stat().st_mtime >= since:
        return True
    if not manifest.is_file() or manifest.stat().st_mtime < since:
        return False
    outcome = json.loads(manifest.read_text(encoding="utf-8")).get("outcome") or {}
    return outcome.get("status") == "failed"


def _sent(p: PlannedMode) -> int:
    """The calls a mode's runs sent this time (what their manifests say this run did itself)."""
    total = 0
    for run in p.runs:
        path = Path(run.settings.model_dump()["out"]) / "manifest.json"
        if path.is_file():
            total += int((json.loads(path.read_text(encoding="utf-8")).get("this_run") or {}).get("calls_sent", 0))
    return total


def _calls(planned: list[PlannedMode]) -> list[CallRecord]:
    """Every call behind the suite's modes (each run folder's calls table), each once."""
    seen: dict[str, CallRecord] = {}
    for p in planned:
        for run in p.runs:
            path = Path(run.settings.model_dump()["out"]) / CALLS.filename
            if path.is_file():
                seen.update((c.call_id, c) for c in read_records(path, CALLS))
    return list(seen.values())


@flow(name="rpbench-suite", log_prints=True)
@flow_body
def suite(settings: SuiteSettings) -> Any:
    """Every benchmark of the suite file for the same models, then their profile and agreement."""
    s = settings
    started = time.time()
    plan = check_suite(s)
    planned = plan.modes
    outcomes: dict[str, tuple[str, list[str]]] = {}
    for p in planned:
        state = None
        for run in p.runs:
            print(f"suite: {p.mode.name}: {run.name} -> {run.settings.model_dump()['out']}")
            state = run.flow(settings=run.settings, return_state=True)
            # A plan checked against a budget it passed stops here (a suite's refusal comes in seconds).
            counted = current_run().plan
            if counted is not None and counted.passed is not None:
                raise PlanPassedBudget(counted.passed)
            if not state.is_completed():
                break  # a later run of the mode reads what this one should have made
        outcomes[p.mode.name] = _mode_outcome(state)
    stages = Stages(s)
    stages.started = started  # the suite's wall time includes its modes' runs
    modes = [p.mode.name for p in planned]
    folders = [str(p.scored.settings.model_dump()["out"]) for p in planned]
    usable = [outcomes[m][0] == "ok" or _written_since(f, started) for m, f in zip(modes, folders, strict=True)]
    for m, f, use in zip(modes, folders, usable, strict=True):
        if not use and (Path(f) / "leaderboard.parquet").is_file():
            outcomes[m][1].append(STALE)
    done = stages.run(profile, models=list(s.models), modes=modes, folders=folders,
                      statuses=[outcomes[m][0] for m in modes],
                      reasons=[outcomes[m][1] for m in modes], usable=usable,
                      tables=[t for m, f in zip(modes, folders, strict=True)
                              for t in (*_tables(Path(f), m), str(Path(f) / HUMAN_AGREEMENT.filename))],
                      weights=plan.weights, resamples=s.resamples, seed=s.seed, out=s.out)
    failed = [f"mode {m}: {'; '.join(outcomes[m][1])}" for m in modes if outcomes[m][0] != "ok"]
    summary = {"modes": {m: {"status": outcomes[m][0], "reasons": outcomes[m][1], "folder": f,
                             "calls_sent": _sent(p)}
                         for m, f, p in zip(modes, folders, planned, strict=True)},
               "models": list(s.models), "report": done.path("report_html"), "samples": done.path("samples"),
               "least_agreeing": done.summary.get("least_agreeing"), "agreement": done.summary.get("agreement_note")}
    return finish_run(s.out, stages, s, "suite", inherited=_calls(planned), failed_parts=failed, suite=summary,
                      suite_settings=s.recorded(s.out))
