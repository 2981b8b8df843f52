"""The shared end of an evaluation: model scores, the leaderboard and the report of any mode, as a stage."""

from __future__ import annotations

import asyncio
import functools
import inspect
import itertools
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rpbench.flows.kit.front.registry import get_mode, load_ref
from rpbench.flows.kit.running.report_imports import report_libraries_loaded
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.ui import publish_markdown, publish_table
from rpbench.storage.schemas import AGREEMENT, FAILURES
from rpbench.storage.tables import read_table
from rpbench.tasks.core.records import Failure
from rpbench.tasks.llm.run_context import current_run
from rpbench.tasks.reports.judges import agreement_section
from rpbench.tasks.reports.report import Report, build_report, write_report
from rpbench.tasks.reports.row_samples import rows_as_samples
from rpbench.tasks.reports.spec import ReportSpec, Scored, Section
from rpbench.tasks.reports.viewer import VIEWER_FILE, Sample, write_viewer

if TYPE_CHECKING:
    from prefect import Task


async def publish_report(run: StageRun, name: str, spec: ReportSpec, rows: Sequence[Any],
                         failures: Sequence[Failure], n_items: int, resamples: int, seed: int,
                         context: dict[str, Any] | None = None, samples: Iterable[Sample] = (),
                         notes: Sequence[str] | None = None, systems: Sequence[str] = (),
                         sections: Sequence[Section] = ()) -> Report:
    """Score ``rows`` (records of mode ``name``'s item table), write the report files and the sample viewer
    (``samples``: what every model said, as the mode shows it; they may be made as they are read; none: a
    sample per row, ``rows_as_samples``), publish them in the UI."""
    intro = "".join(f"**Warning:** {line}.\n\n" for line in notes or ()) + f"{spec.unit.capitalize()}: {n_items}."
    remaining = iter(samples)
    first = next(remaining, None)
    if first is None:  # the mode shows none of its own: a sample per row of its item table
        remaining = rows_as_samples(rows, spec.scoring)
        first = next(remaining, None)
    if first is not None:
        intro += (" Every sample, searchable, with what was asked and how it was judged: "
                  f"[{VIEWER_FILE}]({VIEWER_FILE}).")
    report = write_report(build_report(spec, intro, rows, failures, resamples, seed, context, systems, sections),
                          run.final_folder, spec)
    run.tables.update(report.files)
    if first is not None:
        viewer = write_viewer(run.final_folder, f"{spec.title}: samples", itertools.chain([first], remaining),
                              {"report": "report.html"})
        run.tables["viewer"] = str(viewer)
    await publish_table(f"{name}-leaderboard", report.board, f"{spec.title}: leaderboard")
    await publish_markdown(f"{name}-report", report.markdown, spec.title)
    return report


def _scoring_modules(params: Mapping[str, Any]) -> list[str]:
    """The mode's scoring hook, report and item table modules: their code decides the report."""
    found = get_mode(params["mode"])
    return [ref.partition(":")[0] for ref in (found.score, found.report, found.item_table) if isinstance(ref, str)]


SYSTEMS = "systems"  # in a report stage's options: every system the run scores (Stages.score's ``systems``)


def release_section(release_files: Mapping[str, str]) -> Section | None:
    """Where the run's prompts came from: each release file its stages read, as ``repository@commit/path`` with
    its sha256 (the manifest's ``release_files``), so a report set beside a published table says whose words
    were sent."""
    if not release_files:
        return None
    rows = "".join(f"| `{where}` | `{digest}` |\n" for where, digest in sorted(release_files.items()))
    return Section("The benchmark's own words",
                   "The prompts were read from the benchmark's released code, each file checked against its pinned "
                   "sha256:\n\n| file | sha256 |\n|---|---|\n" + rows)


async def _scored_report(run: StageRun, mode: str, inputs: list[str], options: dict[str, Any], resamples: int,
                         seed: int, notes: list[str] | None = None,
                         release_files: dict[str, str] | None = None) -> StageResult:
    """Any mode's report from its scoring hook: the mode's ``score`` turns ``options`` (its stage tables and
    settings, and ``resamples`` and ``seed`` if it takes them; ``inputs``: every file it reads, whose content
    keys the cache) into a ``Scored``; the kit writes the item table, the failures, the judges' agreement with
    people and the mode's other tables final, scores, reports and publishes."""
    await asyncio.to_thread(report_libraries_loaded)  # matplotlib and scipy, imported while the run waited
    found = get_mode(mode)
    if current_run().plan is not None:
        # A plan counts what a run sends, and a report sends nothing: scoring stand-in replies (CoSER's Rouge-L
        # over every simulated scene) and drawing their charts was a large share of a big plan's time, for
        # nothing. Its item and failure tables are written empty, for a flow that reads them after.
        run.write(found.load_item_table(), [], final=True)
        run.write(FAILURES, [], final=True)
        return run.result(leaderboard=[], planned=True)
    options = dict(options)
    systems = [str(name) for name in options.pop(SYSTEMS, [])]  # the kit's, not the hook's
    hook = load_ref(found.score)
    wanted = inspect.signature(hook).parameters  # a hook that bootstraps too gets the run's resamples and seed
    scored: Scored = hook(**options, **{k: v for k, v in (("resamples", resamples), ("seed", seed)) if k in wanted})
    tables: list[tuple[Any, Sequence[Any]]] = [(found.load_item_table(), scored.rows), (FAILURES, scored.failures),
                                               *scored.finals]
    for spec, records in tables:
        run.write(spec, records, final=True)
    for spec, paths in scored.joined:  # shards' tables joined as Arrow columns, never held as rows
        run.write_table(spec, [read_table(p, spec) for p in paths], final=True)
    people: dict[str, Any] = {}
    if scored.agreement or scored.agreement_note:  # a mode that measures it: never an earlier run's table left
        run.write(AGREEMENT, scored.agreement, final=True)
        people["agreement"] = [a.model_dump() for a in scored.agreement]
    # The release files read before this stage, and by its scoring hook (SocialBench's reader, say).
    read = {**(release_files or {}), **run.release_files}
    sections = [agreement_section(scored.agreement, scored.agreement_note), release_section(read)]
    report = await publish_report(run, found.name, found.load_report(), scored.rows, scored.failures,
                                  scored.n_items, resamples, seed, scored.context, scored.samples, notes, systems,
                                  [s for s in sections if s is not None])
    return run.result(leaderboard=report.board, **people, **scored.summary, **report.analysis.summary)


@functools.cache
def report_of(mode: str) -> Task[..., Awaitable[StageResult]]:
    """Mode ``mode``'s report stage: the kit's one report stage under the name its spec gives it
    (``report_stage``, ``coser-report`` by default, as the UI and the run's manifest show it), one task per mode
    and process; the mode's own part is its scoring hook."""
    return stage(get_mode(mode).report_stage, inputs=("inputs",), code=_scoring_modules)(_scored_report)
