"""A suite file read and turned into runs: for each mode it names, the mode's flows with settings checked before
anything runs, so a typo in the file is one line naming the file, the table and the key."""

from __future__ import annotations

import inspect
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from rpbench.flows.kit.front.registry import BenchmarkMode, SuitePart, load_ref, modes
from rpbench.flows.kit.front.settings import RunSettings, flag_of, path_fields, typed_settings
from rpbench.flows.suite.settings import SuiteSettings
from rpbench.storage.runs import manifest_of
from rpbench.storage.user_files import read_user_text
from rpbench.tasks.core.errors import InputError, close_match, first_error, unknown_name

# Settings the suite command gives every mode alike; a suite file that sets them would split one suite's runs
# over several caches or failure rules.
SHARED = ("out", "models_file", "cache", "max_cost", "keep_failures", "max_failure_share")
WEIGHTS = "weights"


def in_file_keys(model: type[BaseModel], message: str) -> str:
    """A mode's message in a suite file's words: each option of a setting the file can hold named by its key
    (--min-tokens 5000 becomes 'min_tokens' 5000); the suite command's own options (--model) stay flags."""
    keys = {flag_of(model, n): n for n in model.model_fields if n not in (*SHARED, "models")}
    return re.sub(r"--[a-z][a-z0-9-]*", lambda m: f"'{keys[m[0]]}'" if m[0] in keys else m[0], message)


@dataclass(frozen=True)
class SuiteFile:
    path: Path
    sections: dict[str, dict[str, Any]]  # mode -> its table
    weights: dict[str, float] = field(default_factory=dict)


def read_suite_file(path: str | Path) -> SuiteFile:
    """The suite file's tables: one per benchmark mode (by its name), and [weights] (mode -> weight)."""
    path = Path(path)
    text = read_user_text(path, "a suite file")  # missing, a folder, over 8 MB, not UTF-8: one line each
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not a TOML file ({exc})") from None
    known = modes()
    sections: dict[str, dict[str, Any]] = {}
    for name, table in data.items():
        if name == WEIGHTS:
            continue
        if name not in known:
            raise InputError(f"{path}: [{name}]: {unknown_name('benchmark mode', name, known)}")
        if not isinstance(table, dict):
            raise InputError(f"{path}: '{name}' must be a table ([{name}]) of that mode's settings")
        sections[name] = table
    if not sections:
        raise InputError(f"{path}: no benchmark mode in this suite file (a table per mode: "
                         f"{', '.join(f'[{m}]' for m in known)})")
    weights = data.get(WEIGHTS, {})
    if not isinstance(weights, dict):
        raise InputError(f"{path}: 'weights' must be a table ([weights]) of mode = weight")
    for name, w in weights.items():
        if name not in sections:
            raise InputError(f"{path}: [weights] '{name}': not a mode of this suite ({', '.join(sections)})")
        if isinstance(w, bool) or not isinstance(w, int | float) or w < 0:
            raise InputError(f"{path}: [weights] '{name}': a weight is a number, 0 or more (got {w!r})")
    return SuiteFile(path, sections, {k: float(v) for k, v in weights.items()})


@dataclass(frozen=True)
class PlannedRun:
    flow_ref: Any  # the Prefect flow, by reference: imported when it runs
    name: str  # the mode's short name of it
    settings: RunSettings
    scored: bool

    @property
    def flow(self) -> Any:
        return load_ref(self.flow_ref)


@dataclass(frozen=True)
class PlannedMode:
    mode: BenchmarkMode
    folder: Path
    runs: list[PlannedRun]

    @property
    def scored(self) -> PlannedRun:
        return next(r for r in self.runs if r.scored)


def settings_model(flow: Any) -> type[BaseModel]:
    """The settings model a flow takes (its ``settings`` parameter)."""
    model: type[BaseModel] = inspect.signature(flow.fn, eval_str=True).parameters["settings"].annotation
    return model


def _resolved(model: type[BaseModel], values: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """``values`` with every relative path made relative to ``base`` (the suite file's folder)."""
    out = dict(values)
    for name in path_fields(model):
        value = out.get(name)
        if isinstance(value, str):
            out[name] = str(base / value)
        elif isinstance(value, list):
            out[name] = [str(base / v) if isinstance(v, str) else v for v in value]
    return out


def _run(mode: BenchmarkMode, part: SuitePart, s: SuiteSettings, suite: SuiteFile, folder: Path) -> PlannedRun:
    where = f"{suite.path}: [{mode.name}]" + (f" ({part.flow})" if part.flow != mode.name else "")
    if part.flow not in mode.flows:
        raise ValueError(f"mode {mode.name}: its suite names flow '{part.flow}', which it does not have")
    flow = mode.flows[part.flow]
    model = load_ref(mode.settings[part.flow]) if part.flow in mode.settings else settings_model(load_ref(flow))
    unknown = [k for k in part.values if k not in model.model_fields]
    if unknown:
        close = close_match(unknown[0], model.model_fields, cutoff=0.6)
        # The near name may be one a suite file cannot set either: pointing there would lead to a second error.
        hint = "" if not close else f" (did you mean '{close}'?)" if close not in (*SHARED, "models") else \
            f" ('{close}' is set by the suite command for every mode" + (" (--model)" if close == "models" else "") \
            + ", not in a suite file)"
        raise InputError(f"{where} '{unknown[0]}': no such setting of {part.flow}{hint}")
    given = [k for k in SHARED if k in part.values]
    if given:
        raise InputError(f"{where} '{given[0]}': set by the suite command for every mode, not in a suite file")
    limited = {"limit": s.limit} if s.limit is not None and "limit" in model.model_fields else {}
    values = {**_resolved(model, part.values, suite.path.parent), **limited,
              "out": str(folder / part.folder) if part.folder else str(folder),
              **{k: getattr(s, k) for k in SHARED if k != "out"}}
    try:
        with typed_settings():  # a suite file's keys are what the user wrote: a typed contradiction is refused
            settings = model.model_validate(values)
    except ValidationError as exc:
        name, msg = first_error(exc)
        raise InputError(f"{where} '{name}': {msg}" if exc.errors()[0]["loc"] else
                         f"{where}: {in_file_keys(model, msg)}") from None
    assert isinstance(settings, RunSettings)
    return PlannedRun(flow, part.flow, settings, part.scored)


@dataclass(frozen=True)
class SuitePlan:
    modes: list[PlannedMode]
    weights: dict[str, float]  # of the modes run (--mode may leave some of the file's out)


def plan_suite(s: SuiteSettings) -> SuitePlan:
    """Every run of the suite, in the suite file's order of modes, its settings checked."""
    suite = read_suite_file(s.suite_file())
    unknown = [m for m in s.only if m not in suite.sections]
    if unknown:
        near = close_match(unknown[0], suite.sections)
        guess = f"did you mean {near}? " if near else ""
        which = suite.path if s.suite else "the shipped suite (rpbench suite show)"
        raise InputError(f"--mode: '{unknown[0]}' is not a mode of {which} ({guess}its modes: "
                         f"{', '.join(suite.sections)})")
    root = Path(s.out).resolve()
    planned = []
    for name, section in suite.sections.items():
        if s.only and name not in s.only:
            continue
        mode = modes()[name]
        if mode.suite is None:
            raise InputError(f"{suite.path}: [{name}]: this mode cannot run in a suite (its spec has no suite hook)")
        folder = root / name
        try:
            parts = list(load_ref(mode.suite)(section, s.models, folder))
        except ValueError as exc:
            raise InputError(f"{suite.path}: [{name}] {exc}") from None
        runs = [_run(mode, part, s, suite, folder) for part in parts]
        if sum(r.scored for r in runs) != 1:
            raise ValueError(f"mode {name}: its suite hook must mark exactly one run as scored")
        planned.append(PlannedMode(mode, folder, runs))
    weights = {k: v for k, v in suite.weights.items() if not s.only or k in s.only}
    return SuitePlan(planned, weights)


def _finished(folder: Path) -> bool:
    """Whether a run folder holds a run that finished (its manifest says so; a stopped or killed one does not)."""
    manifest = manifest_of(folder) or {}  # a damaged one is an error naming it
    outcome = manifest.get("outcome")
    return isinstance(outcome, dict) and outcome.get("status") == "ok"


def check_suite(s: SuiteSettings) -> SuitePlan:
    """The plan, with each run's own input checks, except a run that reads what an earlier run of the suite
    makes and has not finished making (not there yet, or left half made by a stop, a kill or a failure: its
    flow checks it when it starts, after the earlier run has run again)."""
    planned = plan_suite(s)
    root = Path(s.out).resolve()
    for p in planned.modes:
        made: list[Path] = []  # the folders of the mode's earlier runs that have not finished
        for run in p.runs:
            check = p.mode.checks.get(run.name)
            values = run.settings.model_dump()
            out = Path(values["out"]).resolve() if values.get("out") else None
            inputs = [Path(v).resolve() for name in path_fields(type(run.settings)) if name != "out"
                      for v in (values[name] if isinstance(values[name], list) else [values[name]])
                      if isinstance(v, str)]
            pending = any(v.is_relative_to(root) and (not v.exists() or any(v.is_relative_to(f) for f in made))
                          for v in inputs)
            if out is not None and not _finished(out):
                made.append(out)
            if check is None:
                continue
            if not pending:
                try:
                    load_ref(check)(run.settings)
                except InputError as exc:  # the mode's own words, with where in the suite they come from
                    if str(exc).startswith("--model:"):  # the suite command's own option, not the file's
                        raise
                    raise InputError(f"{s.suite_file()}: [{p.mode.name}]: "
                                     f"{in_file_keys(type(run.settings), str(exc))}") from None
    return planned

