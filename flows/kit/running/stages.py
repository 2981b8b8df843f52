"""The stages one flow run runs: where the run works (``RunPlace``), and ``Stages``, which submits each stage's
shards, runs again a cached result that cannot be trusted, and keeps what was run and what came from the cache."""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import Task

from rpbench.flows.kit.front.registry import run_models
from rpbench.flows.kit.front.settings import RunSettings
from rpbench.flows.kit.running.notes import run_notes
from rpbench.flows.kit.running.runtime import new_run
from rpbench.flows.kit.running.stage import KEEP_FAILURES, StageResult


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
        self.settings = settings
        # By default a rerun heals: a cached stage with calls that got no usable reply runs again (its answered
        # calls come from the call cache; the failed ones are sent again). --keep-failures replays them instead.
        self.keep_failures = bool(getattr(settings, "keep_failures", False))
        # Warnings every report of the run carries (a judge scoring its own model's answers), handed to each
        # stage that takes ``notes`` (the report stages): part of their cache key, so a report says them.
        self.notes = (run_notes(settings, run_models(settings.models_file))
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

    def score(self, mode: str, options: Mapping[str, Any], *, resamples: int | None = None,
              seed: int | None = None, systems: Sequence[str] = ()) -> StageResult:
        """Mode ``mode``'s scores and report: the kit's report stage, its scoring hook given ``options`` (the
        stage tables and settings it scores). Every file named in ``options`` keys the stage's cache (the hook
        reads only what it is given), and the bootstrap takes the run's ``resamples`` and ``seed`` unless
        given. ``systems``: the run's systems, each on the leaderboard even if none of its items was scored."""
        from rpbench.flows.kit.running.report import SYSTEMS, report_of

        files = sorted({v for v in _strings(options) if Path(v).is_file()})
        options = {**options, SYSTEMS: list(systems)} if systems else dict(options)
        # The release files the stages before it read: the report says whose words were sent.
        release_files = {k: v for r in self.results for k, v in r.release_files.items()}
        return self.run(report_of(mode), mode=mode, inputs=files, options=options,
                        resamples=self.settings.resamples if resamples is None else resamples,
                        seed=self.settings.seed if seed is None else seed,
                        release_files=dict(sorted(release_files.items())))

    def report(self) -> dict[str, Any]:
        return {"stages": len(self.results), "cached": sum(self.cached),
                "seconds": round(time.time() - self.started, 1),
                "run": [f"{r.stage}[{r.shard}]" if r.shard else r.stage
                        for r, c in zip(self.results, self.cached, strict=True) if not c]}


def _strings(value: Any) -> list[str]:
    """Every string in ``value``, through lists and mappings."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [x for v in value.values() for x in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _strings(v)]
    return []
