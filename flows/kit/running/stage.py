"""Stage tasks: each stage of a flow is a Prefect task that reads Parquet paths, writes its own tables
atomically, returns their paths, and is cached on exactly what decides its output.

A stage's cache key covers the content of its input files, its parameters,
the SHA-256 of every prompt template it may render, the resolved settings of
the model roles it calls (and the retry policy), and the code. Rerunning a
finished flow therefore finds every stage Cached in Prefect and sends no LLM
call; binding a role to another model re-runs only the stages that call it.
Concurrency of LLM calls stays inside a stage (asyncio under the gateway's
bounds); flows spread stages over shards (books, characters, models under
test) with ``submit``, so any Prefect task runner can run them side by side.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import itertools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
from prefect import Task, task
from prefect.cache_policies import CacheKeyFnPolicy
from prefect.context import TaskRunContext
from pydantic import BaseModel, Field

from rpbench import prompts
from rpbench.flows.kit.front.registry import run_models
from rpbench.flows.kit.front.systems import slug
from rpbench.flows.kit.running.code_digest import code_digest
from rpbench.flows.kit.running.progress import StageProgress
from rpbench.flows.kit.running.runtime import shared_gateway
from rpbench.flows.kit.running.ui import publish_table
from rpbench.prompts import releases
from rpbench.storage.schemas import CALLS, TableSpec
from rpbench.storage.tables import to_arrow, write_records, write_table
from rpbench.tasks.core.errors import InputError, ModelUnusable
from rpbench.tasks.llm.gateway import Gateway
from rpbench.tasks.llm.ledger import Ledger, read_journal
from rpbench.tasks.llm.local.engines import local_activity
from rpbench.tasks.llm.local.models import local_name

R = TypeVar("R", bound=BaseModel)
ARTIFACT_ROWS = 20
Roles = Sequence[str] | Callable[[Mapping[str, Any]], Iterable[str]]


class StageResult(BaseModel):
    """What a stage returns (and Prefect keeps as its cached result): the tables it wrote and a summary."""

    stage: str
    shard: str = ""
    tables: dict[str, str] = Field(default_factory=dict)  # table name -> path
    summary: dict[str, Any] = Field(default_factory=dict)  # counts for flows, manifests and logs
    templates: dict[str, str] = Field(default_factory=dict)  # prompt templates rendered -> SHA-256
    # Release files read (the words of a benchmark's own code): "<repository>@<commit>/<path>" -> SHA-256.
    release_files: dict[str, str] = Field(default_factory=dict)
    calls: str | None = None  # this stage's own calls table
    # The call journal its attempts appended to. The flow deletes it once Prefect has kept this result: a run
    # killed after the stage wrote its calls table but before Prefect persisted the result runs the stage
    # again, and the journal is then all that remembers which of its calls were really sent.
    journal: str | None = None
    unanswered: int = 0  # calls that got no usable reply: a rerun runs the stage again to retry them
    # The first ``carried`` rows of the calls table are an earlier, stopped attempt's (from its journal): they
    # count in the run's totals, not in what this run sent.
    carried: int = 0

    def path(self, table: str) -> str:
        return self.tables[table]

    def scores(self, *keys: str, **more: Any) -> dict[str, Any]:
        """A report stage's result as a run's summary gives it: the leaderboard, the judges' agreement with
        people where the mode measures it, the report stage's summary entries ``keys``, ``more``, the report."""
        if self.summary.get("planned"):  # a plan's report stage, which scores nothing (see report.py)
            return {"leaderboard": [], "report": None}
        people = ("agreement",) if "agreement" in self.summary else ()
        return {"leaderboard": self.summary["leaderboard"], **{k: self.summary[k] for k in (*people, *keys)}, **more,
                "report": self.path("report_html")}

    def missing(self) -> list[str]:
        """Files this result names that are no longer there (the flow then runs the stage again)."""
        paths = [*self.tables.values(), *([self.calls] if self.calls else [])]
        return [p for p in paths if not Path(p).exists()]


# Prompt templates a stage may render: "group/name" (every language) or "group/" (everything under it), or a
# function giving them (for a shared stage whose templates are those of whichever modes are registered).
Templates = Sequence[str] | Callable[[], Sequence[str]]


@dataclass(frozen=True)
class StageSpec:
    name: str
    templates: Templates = ()
    roles: Roles = ()  # model roles it calls, or a function of its parameters giving them
    inputs: tuple[str, ...] = ()  # parameters that hold paths (or lists of paths) whose content counts
    # Modules beyond the stage's own whose code decides its output, as a function of its parameters (a shared
    # stage that runs whichever mode it is given names that mode's modules).
    code: Callable[[Mapping[str, Any]], Iterable[str]] | None = None
    # Its calls are independent (none waits on another's reply): a role with ``batch`` sends them as a batch.
    batch: bool = False

    def role_names(self, params: Mapping[str, Any]) -> list[str]:
        return sorted(set(self.roles(params) if callable(self.roles) else self.roles))

    def template_names(self) -> tuple[str, ...]:
        return tuple(self.templates() if callable(self.templates) else self.templates)


# -- the cache key --------------------------------------------------------------------------------
# A parameter every stage task takes (its function need not): replay an earlier run's failures rather than retry
# them (--keep-failures), handed down by the flow (``Stages``). How a rerun treats failures, not what a stage makes.
KEEP_FAILURES = "keep_failures"
# Where calls are cached, the file whose effect comes in resolved, and how failures are treated: not in the key.
_NOT_HASHED = ("cache", "models_file", KEEP_FAILURES)


_file_digests: dict[tuple[str, int, int], str] = {}


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (remembered per path, size and modification time within this process); of a
    folder (an input a mode reads the files of), its files' names and digests, so an edit inside it counts."""
    p = Path(path)
    if p.is_dir():
        inside = sorted(f for f in p.rglob("*") if f.is_file()
                        and not any(part.startswith(".") for part in f.relative_to(p).parts))
        return hashlib.sha256(json.dumps([[str(f.relative_to(p)), file_digest(f)] for f in inside]).encode()
                              ).hexdigest()
    if not p.is_file():
        return "missing"
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _file_digests:
        _file_digests[key] = hashlib.sha256(p.read_bytes()).hexdigest()
    return _file_digests[key]


def canonical(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return canonical(dataclasses.asdict(value))
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    return value


def _input_digest(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return [_input_digest(v) for v in value]
    return file_digest(value)


def role_identities(params: Mapping[str, Any], roles: Iterable[str]) -> dict[str, Any]:
    """What each role resolves to (model, endpoint, sampling), and for local models where the weights are."""
    roles = list(roles)
    if not roles:
        return {}
    config = run_models(params.get("models_file"))
    out: dict[str, Any] = {"retry": config.retry.model_dump()}
    for role in roles:
        spec = config.for_role(role)
        identity = spec.identity()
        name = local_name(spec.model)
        if name is not None and name in config.local_models:
            identity["weights"] = config.local_models[name].path
        out[role] = identity
    return out


def stage_key(spec: StageSpec, fn: Callable[..., Any]) -> Callable[[TaskRunContext, dict[str, Any]], str]:
    source = inspect.getsource(fn)
    # Worked out once, when the stage is defined: not in the task runner's threads, where several stages
    # compute their keys at once.
    own_code = code_digest(fn.__module__)

    def key(_ctx: TaskRunContext, params: dict[str, Any]) -> str:
        identity = {
            "stage": spec.name,
            "code": [own_code, *(code_digest(m) for m in (spec.code(params) if spec.code else ()))],
            "source": source,
            "params": {k: canonical(v) for k, v in sorted(params.items())
                       if k not in spec.inputs and k not in _NOT_HASHED},
            "inputs": {k: _input_digest(params.get(k)) for k in spec.inputs},
            "templates": prompts.templates_digest(spec.template_names()),
            "roles": role_identities(params, spec.role_names(params)),
        }
        return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()

    return key


# -- running a stage ------------------------------------------------------------------------------
FINAL = "_final"  # no slug has an underscore, so no shard's folder can be called this


def final_folder(out: str | Path) -> Path:
    return Path(out) / "stages" / FINAL


class StageRun:
    """What a stage function is handed: where to write, a gateway with its own accounting, progress."""

    def __init__(self, spec: StageSpec, params: Mapping[str, Any], keep_failures: bool = False) -> None:
        self.spec = spec
        self.keep_failures = keep_failures
        self.out = Path(params["out"])
        self.shard = str(params.get("shard") or "")
        self.models_file, self.cache = params.get("models_file"), params.get("cache")
        self.label = f"{spec.name}[{self.shard}]" if self.shard else spec.name
        self.templates: dict[str, str] = {}
        self.release_files: dict[str, str] = {}
        self.tables: dict[str, str] = {}
        self._gateways: list[Gateway] = []
        self.progress = StageProgress(self.label, activity=self.activity)
        # Calls made by earlier attempts of this stage that were killed before they finished: they were
        # sent (and paid for), so they stay in the accounting.
        self.calls_table = self.out / "calls" / f"{slug(self.label)}.parquet"
        self.journal = self.calls_table.with_suffix(".journal.jsonl")
        self.earlier_calls = read_journal(self.journal)

    def activity(self) -> str:
        """What is under way: this stage's calls done and in flight, and the local models' speed."""
        ledgers = [g.ledger for g in self._gateways]
        parts = []
        if ledgers:
            done = sum(ledger.count() for ledger in ledgers)
            parts.append(f"calls {done} done, {sum(ledger.in_flight for ledger in ledgers)} in flight")
        parts += [g.batch_status for g in self._gateways if g.batch_status]
        local = local_activity()
        if local:
            parts.append(local)
        return "; ".join(parts)

    @property
    def folder(self) -> Path:
        """Where a shard's tables go (the final folder for a stage without shards): a folder per stage, so two
        stages of one shard (a system's answers, then their grades) each keep their own ``failures.parquet``."""
        return self.out / "stages" / slug(self.shard) / slug(self.spec.name) if self.shard else self.final_folder

    @property
    def final_folder(self) -> Path:
        """Where a run's final tables and files are made; ``finish_run`` publishes them into the run folder
        together once every stage has succeeded, so a failed run leaves the previous outputs as they were."""
        return final_folder(self.out)

    @contextlib.asynccontextmanager
    async def gateway(self) -> AsyncIterator[Gateway]:
        """The run's gateway, with this stage's own ledger; its HTTP session and workers close after."""
        gateway = shared_gateway(self.models_file, self.cache).fork(Ledger(self.journal))
        gateway.heal = not self.keep_failures
        gateway.stage, gateway.batchable = self.spec.name, self.spec.batch
        self._gateways.append(gateway)
        try:
            yield gateway
        finally:
            await gateway.aclose()

    def write(self, spec: TableSpec[R], records: Sequence[R], filename: str | None = None,
              final: bool = False) -> str:
        """Write a table atomically (into the shard's folder, or the final folder when ``final``)."""
        path = (self.final_folder if final else self.folder) / (filename or spec.filename)
        write_records(path, records, spec)
        self.tables[Path(filename).stem if filename else spec.name] = str(path)
        return str(path)

    def write_table(self, spec: TableSpec[Any], parts: Sequence[pa.Table], final: bool = False) -> str:
        """A table made of others already written (each a shard's), joined as Arrow columns, never as rows."""
        path = (self.final_folder if final else self.folder) / spec.filename
        joined = pa.concat_tables(parts) if parts else to_arrow([], spec)
        write_table(path, joined, spec)
        self.tables[spec.name] = str(path)
        return str(path)

    def written(self, spec: TableSpec[R], records: Sequence[R], **more: Any) -> StageResult:
        """A stage's usual end: ``records`` written as ``spec``'s table, and the result counting them (under the
        table's name) and those whose ``status`` is failed, with ``more``."""
        self.write(spec, records)
        failed = sum(getattr(r, "status", None) == "failed" for r in records)
        return self.result(**{spec.name: len(records)}, failed=failed, **more)

    def result(self, **summary: Any) -> StageResult:
        calls = None
        if self.earlier_calls or self._gateways:
            write_records(self.calls_table, itertools.chain(self.earlier_calls,
                                                            *(g.ledger.iter_records() for g in self._gateways)),
                          CALLS)
            calls = str(self.calls_table)
        undeclared = sorted(p for p in self.templates if not prompts.covered_by(p, self.spec.template_names()))
        if undeclared:
            # Not a user error: a stage that renders a template it does not declare would miss edits to it.
            raise RuntimeError(f"stage {self.spec.name} rendered undeclared templates {undeclared}")
        return StageResult(stage=self.spec.name, shard=self.shard, tables=dict(self.tables), summary=summary,
                           templates=dict(sorted(self.templates.items())),
                           release_files=dict(sorted(self.release_files.items())), calls=calls,
                           journal=str(self.journal) if calls else None,
                           unanswered=sum(g.ledger.unanswered for g in self._gateways),
                           carried=len(self.earlier_calls))


async def _publish(run: StageRun, result: StageResult) -> None:
    """The stage's main table in the Prefect UI: its first rows, with where the whole table is."""
    tables = [(n, p) for n, p in result.tables.items() if p.endswith(".parquet")]  # not a report or a role file
    if not tables:
        return
    name, path = tables[0]
    table = pq.read_table(path)
    rows = [{k: _cell(v) for k, v in r.items()} for r in table.slice(0, ARTIFACT_ROWS).to_pylist()]
    others = ", ".join(f"{n} ({Path(p).name})" for n, p in result.tables.items() if n != name)
    description = (f"{run.label}: {table.num_rows} rows of {name} in {published_path(path, run.out)}"
                   + (f"; also {others}" if others else ""))
    # "stage-" keeps a stage's table apart from the report artifacts of a mode (its report stage has the
    # mode's name, as the Markdown report does).
    await publish_table(f"stage-{slug(run.label)}", rows, description)


def published_path(path: str | Path, out: Path) -> Path:
    """Where a stage's final table will be once the run publishes its folder (its own path otherwise)."""
    try:
        return out / Path(path).relative_to(final_folder(out))
    except ValueError:
        return Path(path)


def _cell(value: Any, limit: int = 120) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value[:limit] + "..." if isinstance(value, str) and len(value) > limit else value
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text[:limit] + "..." if len(text) > limit else text


StageFn = Callable[..., Awaitable[StageResult]]

# What every stage task takes beside its own parameters (name, default, type): the run's place and how it
# treats failures (``Stages`` hands them over; ``StageRun`` holds them).
_GIVEN: tuple[tuple[str, Any, Any], ...] = (
    ("out", None, str), ("shard", "", str), ("models_file", None, str | None), ("cache", None, str | None),
    (KEEP_FAILURES, False, bool))


def _run_name(name: str) -> Callable[[], str]:
    """The task run's name in the UI: the stage's, and its shard's where it has one."""
    def named() -> str:
        from prefect.runtime import task_run

        shard = (task_run.parameters or {}).get("shard")
        return f"{name}-{shard}" if shard else name

    return named


def _check_declaration(spec: StageSpec, fn: StageFn, own: set[str]) -> None:
    """What a stage declares, checked as it is declared (at import): a misspelt input would leave its file out
    of the cache key, and a misspelt template would leave edits to it unnoticed, both silently."""
    where = f"stage {spec.name} ({fn.__module__}.{fn.__qualname__})"
    given = {n for n, _d, _a in _GIVEN}
    if unknown := sorted(set(spec.inputs) - own - given):
        raise TypeError(f"{where}: inputs={unknown} name no parameter of it (its parameters: {sorted(own)})")
    if not callable(spec.templates) and (missing := prompts.unknown_templates(tuple(spec.templates))):
        raise TypeError(f"{where}: templates={missing} match no prompt template under {prompts.TEMPLATE_DIR}")
    if not callable(spec.roles) and isinstance(spec.roles, str):
        raise TypeError(f"{where}: roles must be a list of role names, not the string {spec.roles!r}")


def stage(name: str, *, templates: Templates = (), roles: Roles = (), inputs: Sequence[str] = (),
          code: Callable[[Mapping[str, Any]], Iterable[str]] | None = None, batch: bool = False,
          ) -> Callable[[StageFn], Task[..., Awaitable[StageResult]]]:
    """Make ``async fn(run: StageRun, **params) -> StageResult`` a cached Prefect task named ``name``.

    The task also takes the run's place, ``out`` (the run folder), ``shard`` (the part of the work a call
    does), ``models_file`` and ``cache``, and ``keep_failures``, whether ``fn`` lists them or not: ``Stages``
    hands them over and ``run`` holds them, so a stage names only what is its own (it lists one of them only
    to read it). ``batch``: its calls are independent of each other's replies, so a role with ``batch = true``
    sends them through its provider's batch API.
    """
    spec = StageSpec(name, templates if callable(templates) else tuple(templates), roles, tuple(inputs), code,
                     batch)

    def decorate(fn: StageFn) -> Task[..., Awaitable[StageResult]]:
        signature = inspect.signature(fn)
        params = list(signature.parameters.values())[1:]  # without `run`
        own = {p.name for p in params}
        _check_declaration(spec, fn, own)
        added = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=a)
                 for n, d, a in _GIVEN if n not in own]
        outer = signature.replace(parameters=[*params, *added])

        async def run_stage(*args: Any, **kwargs: Any) -> StageResult:
            bound = outer.bind(*args, **kwargs)  # Prefect passes some parameters by position
            bound.apply_defaults()
            given = dict(bound.arguments)
            keep = bool(given.get(KEEP_FAILURES, False))
            kwargs = {k: v for k, v in given.items() if k in own}
            run = StageRun(spec, given, keep)
            prompts.record_into(run.templates)
            releases.record_reads_into(run.release_files)
            started = time.monotonic()
            with run.progress:
                try:
                    result = await fn(run, **kwargs)
                except (ModelUnusable, InputError) as exc:  # one line in the log and the UI, not a traceback
                    from prefect.states import Failed

                    # What the stage read before it stopped: a stopped run's manifest lists it (finish.stopped_run).
                    exc.stage_reads = {"templates": dict(run.templates),  # type: ignore[union-attr]
                                       "release_files": dict(run.release_files)}

                    return Failed(message=str(exc), data=exc)  # type: ignore[return-value]
            result.summary.setdefault("seconds", round(time.monotonic() - started, 3))
            await _publish(run, result)
            return result

        run_stage.__signature__ = outer  # type: ignore[attr-defined]
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):  # what Prefect shows and hashes
            setattr(run_stage, attr, getattr(fn, attr))
        return task(name=name, task_run_name=_run_name(name),
                    cache_policy=CacheKeyFnPolicy(cache_key_fn=stage_key(spec, fn)), persist_result=True)(run_stage)

    return decorate


__all__ = ["FINAL", "StageResult", "StageRun", "final_folder", "stage"]
