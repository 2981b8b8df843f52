"""Running a flow's stages and finishing its run: the manifest, call accounting and a summary in the UI."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import gc
import inspect
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from prefect import Task

from rpbench.flows.kit.front import interrupts
from rpbench.flows.kit.front.registry import models_config, models_file_digest
from rpbench.flows.kit.front.settings import RunSettings
from rpbench.flows.kit.running.environment import start_temporary_server
from rpbench.flows.kit.running.outcome import judge_run
from rpbench.flows.kit.running.plan import planned_for
from rpbench.flows.kit.running.runtime import new_run
from rpbench.flows.kit.running.self_judging import embedded_roles, self_judging
from rpbench.flows.kit.running.stage import KEEP_FAILURES, StageResult, final_folder, slug
from rpbench.flows.kit.running.ui import publish_markdown_now
from rpbench.flows.kit.scale.run_workers import workers_for_run
from rpbench.flows.kit.scale.runners import chosen_runner, with_chosen_runner
from rpbench.storage.runs import RunDir
from rpbench.storage.schemas import CALLS
from rpbench.storage.tables import read_records, write_records
from rpbench.tasks.core.errors import ModelUnusable, RunFailed
from rpbench.tasks.core.records import CallRecord
from rpbench.tasks.llm import ModelsConfig
from rpbench.tasks.llm.batches import batch_every_role
from rpbench.tasks.llm.budget import BudgetReached, start_run_budget
from rpbench.tasks.llm.event_loop import run_coroutine
from rpbench.tasks.llm.ledger import summarize_calls
from rpbench.tasks.reports.summary import run_summary_markdown

_notes: dict[tuple[str, str, str], tuple[list[str], list[str]]] = {}


def judge_notes(settings: RunSettings, config: ModelsConfig) -> tuple[list[str], list[str]]:
    """A judge scoring its own model, and roles left on the embedded model beside real ones: worked out once for
    a run's settings and models (the run's start, its reports and its manifest all say them)."""
    key = (type(settings).__qualname__, settings.model_dump_json(), config.model_dump_json())
    if key not in _notes:
        if len(_notes) > 64:
            _notes.clear()
        _notes[key] = (self_judging(settings, config), embedded_roles(settings, config))
    return _notes[key]


def run_notes(settings: RunSettings, config: ModelsConfig) -> list[str]:
    """What a run says as it starts and every report of it carries (``judge_notes``, one list)."""
    return [line for lines in judge_notes(settings, config) for line in lines]


@dataclass(frozen=True)
class RunPlace:
    """Where a run works: its folder, its models file and its call cache. Every stage of the run is handed them
    (``Stages.map`` fills in those a stage takes), so no flow lists them again."""

    out: str | None = None
    models_file: str | None = None
    cache: str | None = None

    @classmethod
    def of(cls, settings: Any, out: str | None = None) -> RunPlace:
        return cls(out if out is not None else getattr(settings, "out", None), getattr(settings, "models_file", None),
                   getattr(settings, "cache", None))


class Stages:
    """The stage tasks one flow run ran: their results, and which of them Prefect took from its cache.

    ``out``: the run's folder when it is not the settings' ``out``."""

    def __init__(self, settings: Any = None, out: str | None = None) -> None:
        self.started = time.time()  # the run's wall time counts from here
        self.results: list[StageResult] = []
        self.cached: list[bool] = []
        self.place = RunPlace.of(settings, out)
        # By default a rerun heals: a cached stage with calls that got no usable reply runs again (its answered
        # calls come from the call cache; the failed ones are sent again). --keep-failures replays them instead.
        self.keep_failures = bool(getattr(settings, "keep_failures", False))
        # Warnings every report of the run carries (a judge scoring its own model's answers), handed to each
        # stage that takes ``notes`` (the report stages): part of their cache key, so a report says them.
        self.notes = (run_notes(settings, models_config(settings.models_file))
                      if isinstance(settings, RunSettings) else [])
        new_run()

    def map(self, stage: Task[..., Any], shards: Sequence[Mapping[str, Any]]) -> list[StageResult]:
        """One call of ``stage`` per shard, submitted together so the flow's task runner can spread them.

        A cached result whose tables are gone (a deleted folder) is run again, never trusted; so is one with
        calls that got no usable reply, unless the run keeps failures.
        """
        shards = [{**self._given(stage), **shard} for shard in shards]
        futures = [stage.submit(**shard) for shard in shards]
        results: list[StageResult] = [f.result() for f in futures]
        cached = [f.state.name == "Cached" for f in futures]
        stale = [i for i, r in enumerate(results) if r.missing()
                 or (cached[i] and r.unanswered and not self.keep_failures)]
        if stale:
            again = stage.with_options(refresh_cache=True)
            redone = {i: again.submit(**shards[i]) for i in stale}
            for i, future in redone.items():
                results[i], cached[i] = future.result(), False
        for r in results:  # Prefect has kept these results (and their calls tables): the journals are spent
            if r.journal:
                Path(r.journal).unlink(missing_ok=True)
        self.results += results
        self.cached += cached
        return results

    def _given(self, stage: Task[..., Any]) -> dict[str, Any]:
        """What the run hands every stage that takes it: its place, whether it keeps failures, its notes."""
        fn = getattr(stage, "fn", None)
        if fn is None:
            return {}
        takes = inspect.signature(fn).parameters
        offered = {**dataclasses.asdict(self.place), KEEP_FAILURES: self.keep_failures, "notes": self.notes}
        return {k: v for k, v in offered.items() if k in takes}

    def run(self, stage: Task[..., Any], **params: Any) -> StageResult:
        return self.map(stage, [params])[0]

    def report(self) -> dict[str, Any]:
        return {"stages": len(self.results), "cached": sum(self.cached),
                "seconds": round(time.time() - self.started, 1),
                "run": [f"{r.stage}[{r.shard}]" if r.shard else r.stage
                        for r, c in zip(self.results, self.cached, strict=True) if not c]}


def publish_outputs(out: str | Path) -> dict[str, str]:
    """Move a finished run's final files into its folder, together, and return where each went.

    Stages made them under ``stages/_final/``; until now the run folder still held the previous run's
    outputs, whole. Each file is hard-linked in by an atomic rename (the staged copy stays, so the
    stages' cached results stay valid), which takes milliseconds for the whole set.
    """
    staged, root = final_folder(out), Path(out)
    moved: dict[str, str] = {}
    if not staged.is_dir():
        return moved
    # Files in folders (a RoleBench layout, say) keep their place below the run folder.
    # A name starting with a dot is work in progress (a temporary file or folder a killed writer left).
    for path in sorted(p for p in staged.rglob("*")
                       if p.is_file() and not any(part.startswith(".") for part in p.relative_to(staged).parts)):
        target = root / path.relative_to(staged)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{path.name}.publish")
        tmp.unlink(missing_ok=True)
        try:
            os.link(path, tmp)
        except OSError:  # a file system without hard links
            shutil.copy2(path, tmp)
        os.replace(tmp, target)
        moved[str(path)] = str(target)
    return moved


def _published(value: Any, moved: Mapping[str, str]) -> Any:
    """``value`` with every staged path in it replaced by where the file was published."""
    if isinstance(value, str):
        return moved.get(value, value)
    if isinstance(value, dict):
        return {k: _published(v, moved) for k, v in value.items()}
    if isinstance(value, list):
        return [_published(v, moved) for v in value]
    return value


def finish_run(out: str, stages: Stages, settings: RunSettings, flow: str,
               inherited: Sequence[CallRecord] = (), failed_parts: Sequence[str] = (), **sections: Any) -> Any:
    """Publish the run's outputs, merge the stages' call accounting into ``calls.parquet``, judge the
    outcome, write the manifest (last), publish a summary. Returns the manifest, or, when the run failed by
    ``settings.max_failure_share``, Prefect's Failed state carrying a ``RunFailed`` (the flow returns it:
    the run is Failed in Prefect, and the caller gets the exception).

    ``totals`` account for every call behind the run's tables: the stages' own, and ``inherited`` ones (the
    calls of an earlier run whose tables this run carries forward, as a rejudge carries the conversations);
    ``this_run`` says what this run did itself (a rerun of a finished flow finds every stage cached and sends
    nothing). ``failed_parts``: reasons the run failed beyond its own stages (a suite's mode that failed).
    """
    moved = publish_outputs(out)
    sections = _published(sections, moved)
    models_file = settings.models_file
    run = RunDir(Path(out), started=stages.started)
    calls: list[CallRecord] = list(inherited)
    fresh: list[CallRecord] = []
    for result, cached in zip(stages.results, stages.cached, strict=True):
        if result.calls:
            # A stage's calls in the order of what was asked, not of when each reply came (which concurrency
            # decides): the same run twice writes the same table.
            records = sorted(read_records(result.calls, CALLS), key=lambda r: (r.tag or "", r.cache_key, r.attempt))
            known = {c.call_id for c in calls}  # a cached stage's calls may be among the inherited ones
            calls += [r for r in records if r.call_id not in known]
            if not cached:
                fresh += records
    write_records(run.root / CALLS.filename, calls, CALLS)
    totals = summarize_calls(calls)
    templates = {k: v for r in stages.results for k, v in r.templates.items()}
    stage_calls = {f"{r.stage}[{r.shard}]" if r.shard else r.stage: r.calls for r in stages.results if r.calls}
    outcome = judge_run(run.root, stage_calls, settings.max_failure_share)
    if failed_parts:
        outcome = {**outcome, "status": "failed", "reasons": [*failed_parts, *outcome["reasons"]]}
    config = models_config(models_file)
    spent = summarize_calls(fresh)
    planned = planned_for(settings, out)  # a plan of this very command (--plan), kept in the folder: shown beside
    judging_self, left_embedded = judge_notes(settings, config)
    manifest = run.write_manifest(
        outcome=outcome,
        self_judging=judging_self,
        embedded_roles=left_embedded,
        flow=flow,
        config=config.redacted(),
        models_file=models_file,
        models_file_sha256=models_file_digest(models_file),
        models=totals.pop("models"),
        prompt_templates=dict(sorted(templates.items())),
        totals=totals,
        this_run={**stages.report(), "calls_sent": spent["calls_sent"], "cost_usd": spent["cost_usd"],
                  "prompt_tokens": spent["prompt_tokens"], "reply_tokens": spent["completion_tokens"],
                  "runner": chosen_runner()},
        plan=planned["total"] if planned else None,  # replaces an earlier command's plan in a shared folder
        **sections,
    )
    publish_markdown_now(f"run-summary-{slug(flow)}", run_summary_markdown(manifest, out), "rpbench run summary")
    if outcome["status"] == "failed":
        return failed_state(RunFailed(out, outcome["reasons"], outcome["failures"]))
    return manifest


def stopped_by_budget(settings: Any, flow: str, error: BudgetReached) -> None:
    """A run the budget stopped still says what it spent: its manifest (outcome stopped, the budget, the spend,
    what is left) and a run summary; every answered call is in the call cache and the stage journals, so the
    same command with a larger budget continues."""
    out = getattr(settings, "out", None)
    if not out or not isinstance(settings, RunSettings):
        return
    config = models_config(settings.models_file)
    run = RunDir(Path(out))
    manifest = run.write_manifest(
        outcome={"status": "stopped", "reasons": [str(error)], "failures": {}},
        budget={"budget_usd": error.budget, "spent_usd": round(error.spent, 6),
                "left_usd": round(error.budget - error.spent, 6), "scope": error.scope},
        flow=flow, config=config.redacted(), models_file=settings.models_file,
        settings=settings.recorded(out))
    publish_markdown_now(f"run-summary-{slug(flow)}", run_summary_markdown(manifest, str(out)),
                         "rpbench run summary")


def failed_state(error: RunFailed | ModelUnusable) -> Any:
    """Prefect's Failed state for a run that failed by its rule, or stopped on a model it cannot use: the UI
    shows the reasons, no traceback; whoever called the flow gets ``error`` raised."""
    from prefect.states import Failed

    return Failed(message=str(error), data=error)


F = TypeVar("F", bound=Callable[..., Any])
_flow_depth = 0  # rpbench flows running in this process, nested (a demo's subflows inside it)


def _freeze_imports_once() -> None:
    """Put what the process has loaded by its first flow (Prefect, litellm, pydantic's schemas: hundreds of
    thousands of objects) out of the garbage collector's sight, once. Every full collection walked them all
    again, with every thread stopped, a few times in each stage of a large run (benchmarks/scale.py).
    Freed objects still go by their reference counts; only a cycle that was already garbage stays (one
    collection first sends those away)."""
    if gc.get_freeze_count() == 0:
        gc.collect()
        gc.freeze()


R = TypeVar("R")


def _given_stages(fn: Callable[[Any, Stages], Any]) -> Callable[[Any], Any]:
    """``fn(s, stages)`` as the one-parameter flow Prefect serves, ``f(settings)``: the run's ``Stages`` made
    from the settings and handed over, so no flow builds it by hand."""
    first = next(iter(inspect.signature(fn, eval_str=True).parameters.values()))
    hints = inspect.get_annotations(fn, eval_str=True)

    def given(settings: Any) -> Any:
        return fn(settings, Stages(settings))

    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(given, attr, getattr(fn, attr))
    given.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [first.replace(name="settings")], return_annotation=hints.get("return", inspect.Signature.empty))
    given.__annotations__ = {"settings": hints.get(first.name, Any), "return": hints.get("return", Any)}
    return given


def flow_body(fn: Callable[..., R]) -> Callable[..., R]:
    """What every rpbench flow function is wrapped in (inside Prefect's ``@flow``):

    - a flow declared ``def f(s: Settings, stages: Stages)`` is served and called as ``f(settings)``, its run's
      ``Stages`` made and handed to it;

    - a model the run cannot use (a refused or missing key, a model the provider does not know) ends it
      Failed with one line, instead of a traceback in the log and the UI;
    - the gateway's worker processes start with the run, and its first stage to use them takes them over
      (``run_workers.workers_for_run``);
    - the first flow of the process puts what it has loaded out of the garbage collector's sight;
    - a command's signal handling is kept over Prefect's (``interrupts.reclaim``);
    - the outermost flow starts the run's budget (``--max-cost``), and each flow says which of its judges is
      the same model as a model under test (``self_judging``).
    """
    if list(inspect.signature(fn).parameters)[1:2] == ["stages"]:
        fn = _given_stages(fn)  # (the signature Prefect sees is the returned wrapper's: settings only)

    def models_file(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        settings = kwargs.get("settings", args[0] if args else None)
        return getattr(settings, "models_file", None)

    @contextlib.contextmanager
    def outermost(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[None]:
        """The run's budget starts with its outermost flow (a demo's or a suite's subflows spend from it). Flows
        nest in one thread here (a served deployment runs each flow in a process of its own)."""
        global _flow_depth
        settings = kwargs.get("settings", args[0] if args else None)
        if _flow_depth == 0:
            start_run_budget(getattr(settings, "max_cost", None))
            batch_every_role(bool(getattr(settings, "batch", False)))
        if isinstance(settings, RunSettings):  # said as the run starts: on the command line and in the UI's log
            for line in run_notes(settings, models_config(settings.models_file)):
                logging.getLogger("rpbench").warning("warning: %s", line)
        _flow_depth += 1
        try:
            yield
        finally:
            _flow_depth -= 1
            if _flow_depth == 0:
                start_run_budget(None)  # the budget was this run's: later runs in the process start their own
                batch_every_role(False)

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            _freeze_imports_once()
            interrupts.reclaim()
            try:
                with outermost(args, kwargs), workers_for_run(models_file(args, kwargs)):
                    return await fn(*args, **kwargs)
            except ModelUnusable as exc:
                return stopped(exc, args, kwargs)

        return _typed_like(run_async, fn)

    def stopped(exc: ModelUnusable, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if isinstance(exc, BudgetReached):
            stopped_by_budget(kwargs.get("settings", args[0] if args else None), fn.__name__, exc)
        return failed_state(exc)

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        _freeze_imports_once()
        interrupts.reclaim()
        try:
            with outermost(args, kwargs), workers_for_run(models_file(args, kwargs)):
                return fn(*args, **kwargs)
        except ModelUnusable as exc:
            return stopped(exc, args, kwargs)

    return _typed_like(run, fn)


def _typed_like(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """The wrapper with ``fn``'s signature, its annotations evaluated: Prefect validates a flow's parameters
    against its signature, resolving names in the module of the function it was given (this one)."""
    wrapper.__signature__ = inspect.signature(fn, eval_str=True)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {k: v for k, v in inspect.get_annotations(fn, eval_str=True).items()}
    return wrapper


def run_flow(flow_fn: Any, **params: Any) -> Any:
    """Run a flow (sync or async) on the runner the environment chooses. The command line's entry point shuts
    Prefect down once the command is done (``environment.shutdown_prefect``)."""
    start_temporary_server()
    result = with_chosen_runner(flow_fn)(**params)
    if asyncio.iscoroutine(result):
        result = run_coroutine(result)
    return result
