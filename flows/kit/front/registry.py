"""Benchmark modes as light plug-ins: a small spec per mode, a registry that fails loudly.

A mode's spec says what a user sees before anything runs (its name, its roles,
its commands' one-line help) and where everything else lives, as
``"package.module:attribute"`` references that are imported on first use: its
flows, its commands, its report and tables, and the optional hooks shared code
calls (annotation kinds, training data, example schedules). So `rpbench --help`
imports no mode, and `rpbench roleinteract run` imports RoleInteract only.
Shared code loops over the registered modes and never names one.

Modes register through the ``rpbench.modes`` entry point group (one line in a
package's pyproject.toml, pointing at a spec) or by calling ``register`` (tests,
notebooks). A reference may also be the object itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rpbench.flows.kit.front.refs import Ref, load_ref
from rpbench.flows.kit.front.run_command import RunCommand
from rpbench.flows.kit.front.smoke import SmokeStep, derivable, derived_smoke
from rpbench.flows.kit.front.smoke import smoke_run as smoke_run  # a mode's spec takes it from here
from rpbench.tasks.core.errors import unknown_name

if TYPE_CHECKING:
    from rpbench.storage.schemas import TableSpec
    from rpbench.tasks.llm.config import ModelsConfig, Role
    from rpbench.tasks.reports.spec import ReportSpec

ENTRY_POINTS = "rpbench.modes"
@dataclass(frozen=True)
class Schedule:
    """An example schedule a mode offers for `rpbench deploy`: one of its flows, a cron line, parameters."""

    flow: str  # the mode's short name of the flow
    name: str  # the deployment's name
    cron: str
    description: str
    # The settings the scheduled runs use (built when deployments are made, so sample paths resolve then).
    parameters: Callable[[], Mapping[str, Any]]


@dataclass(frozen=True)
class SuitePart:
    """One run a mode makes when a suite runs it: one of its flows, into a folder of its own.

    ``values`` are the flow's settings as the suite file gives them (a relative path is relative to the suite
    file; a path into the suite's own output is absolute); the suite adds the shared ones (models file, call
    cache, failure rule) and ``out``.
    """

    flow: str  # the mode's short name of the flow
    values: Mapping[str, Any]
    folder: str  # below the mode's folder in the suite's output ("" for that folder itself)
    scored: bool = False  # its run folder holds the mode's leaderboard: the mode's entry in the suite's profile


def with_models(section: Mapping[str, Any], field_name: str, models: Sequence[str]) -> dict[str, Any]:
    """A suite section's settings with the models under test in ``field_name``; the section may not name
    them itself (the suite command does, for every mode alike)."""
    if field_name in section:
        raise ValueError(f"'{field_name}': the models under test come from the suite command (--model), "
                         "not from the suite file")
    return {**section, field_name: list(models)}


def one_run(flow: str, field_name: str = "models", defaults: Mapping[str, Any] | None = None
            ) -> Callable[[Mapping[str, Any], Sequence[str], Path], list[SuitePart]]:
    """A mode's ``suite`` hook when a suite runs it once: its flow ``flow`` with the section's settings over
    ``defaults`` (what the mode sets in a suite unless the suite file says otherwise), the suite's models in
    ``field_name``."""
    def parts(section: Mapping[str, Any], models: Sequence[str], folder: Path) -> list[SuitePart]:
        return [SuitePart(flow, with_models({**(defaults or {}), **section}, field_name, models), "", scored=True)]

    parts.__doc__ = (f"In a suite: one run of `{flow}` with the section's settings, the suite's models as its "
                     f"{field_name}.")
    return parts


@dataclass(frozen=True)
class BenchmarkMode:
    """A mode's spec. Everything but the first three fields is a reference, loaded when it is used.

    References follow the layout of a mode in this repository: a bare name is looked up in the mode's module
    for it (``flows={"coser": "coser"}`` is ``rpbench.flows.modes.coser.flows:coser``, ``item_table=
    "ITEM_SCORES"`` is in ``rpbench.tasks.modes.<name>.tables``), a module without a dot (or starting with
    one) is under the mode's folder, and the report and commands default to ``<work>.analysis:REPORT`` and
    ``<package>.commands:add_commands``. A mode kept elsewhere gives ``package`` and ``work``, or full
    references."""

    name: str
    description: str
    # Built-in roles: what each does and its settings on a real model and on the embedded one (a models file's
    # [default] and [roles.X] sit over them); a bare description is a role with no settings of its own.
    roles: Mapping[str, Role]
    # Its item-level table (a TableSpec), and how that becomes model scores, a leaderboard and a report.
    item_table: Ref
    report: Ref = "analysis:REPORT"
    # Its scoring hook: the kit's report stage hands it the run's stage tables and settings, and it gives back
    # a ``Scored`` (its item rows, failures, other tables and samples; tasks.reports.spec).
    score: Ref = "analysis:scored"
    report_stage: str = ""  # the report stage's name in the UI and the manifest; by default "<name>-report"
    # Its flows by short name (deployments serve them), and for some of them the function that checks a
    # flow's settings before it starts (files, model names): `rpbench trigger` runs it before sending a run.
    flows: Mapping[str, Ref] = field(default_factory=dict)
    checks: Mapping[str, Ref] = field(default_factory=dict)
    # The settings model of a flow, by short name, for those a suite runs: a suite file is checked against it
    # without importing the flow (Prefect and the gateway take seconds to import). A test holds it to the flow's.
    settings: Mapping[str, Ref] = field(default_factory=dict)
    # A function adding its commands to a Typer app: `rpbench <name> ...`, or, for the commands named in
    # ``top_commands`` (name -> one-line help), at the top level.
    commands: Ref | None = "commands:add_commands"
    top_commands: Mapping[str, str] = field(default_factory=dict)
    # Its flows end to end on shipped samples, small enough for a test: a function of a work folder giving
    # SmokeSteps. The hardening tests (kills and resumes, injected faults, the secrets scan) run it for every
    # registered mode against a loopback server. None: worked out from its settings and samples
    # (``flows.kit.front.smoke``), for a mode whose one flow is its run command.
    smoke: Ref | None = None
    # Optional hooks. Annotation: kind -> an AnnotationKind (tasks.annotation.kinds) that turns a run folder
    # into Label Studio tasks. Training data: a function (path, TrainingRequest) -> samples, or None when the
    # path is not this mode's. Schedules: a function giving Schedules for `rpbench deploy`.
    annotation: Mapping[str, Ref] = field(default_factory=dict)
    training_data: Ref | None = None
    schedules: Ref | None = None
    # How a suite runs the mode: a function (its section of the suite file, the models under test, the mode's
    # folder in the suite's output) -> SuiteParts, the scored one last. A mode without one cannot be in a suite.
    suite: Ref | None = None
    # The benchmark's released code whose words it sends (a ``Release``, or several: "release:RELEASES"), read at
    # run time from pinned files; `rpbench releases` lists them and `rpbench releases fetch` downloads them.
    releases: Ref | None = None
    # For a benchmark that writes battles (the arena): its released leaderboard as arena rows, a function
    # (baseline, judge) -> ArenaRows marked released, shown beside the user's models by `rpbench leaderboard`.
    arena_released: Ref | None = None
    # Where its flows, settings, checks and commands live, and its work (tables, analysis).
    package: str = ""
    work: str = ""

    def __post_init__(self) -> None:
        from rpbench.tasks.llm.config import Role

        package = self.package or f"rpbench.flows.modes.{self.name}"
        work = self.work or f"rpbench.tasks.modes.{self.name}"
        object.__setattr__(self, "package", package)  # where its relative references point (RunCommand's too)
        object.__setattr__(self, "work", work)
        object.__setattr__(self, "report_stage", self.report_stage or f"{self.name}-report")

        def full(ref: Ref, module: str) -> Ref:  # "X": attribute X of ``module``
            return ref if not isinstance(ref, str) or ":" in ref else f"{module}:{ref}"

        def full_name(ref: Ref, base: str) -> Ref:  # "analysis:REPORT", ".a.b:X": modules under ``base``
            if isinstance(ref, str) and ":" in ref and (ref.startswith(".") or "." not in ref.partition(":")[0]):
                return f"{base}.{ref.lstrip('.')}"
            return ref

        object.__setattr__(self, "item_table", full(self.item_table, f"{work}.tables"))
        object.__setattr__(self, "report", full_name(self.report, work))
        object.__setattr__(self, "score", full_name(self.score, work))
        object.__setattr__(self, "commands", full_name(self.commands, package))
        object.__setattr__(self, "schedules", full_name(self.schedules, package))
        object.__setattr__(self, "training_data", full_name(self.training_data, work))
        object.__setattr__(self, "releases", full_name(self.releases, work))
        object.__setattr__(self, "arena_released", full_name(self.arena_released, work))
        object.__setattr__(self, "annotation", {k: full_name(v, work) for k, v in self.annotation.items()})
        for kind in ("flows", "checks", "settings"):
            refs = getattr(self, kind)
            object.__setattr__(self, kind, {k: full(full_name(v, package), f"{package}.{kind}")
                                            for k, v in refs.items()})

        # A role given as a bare description is a Role with no settings of its own.
        roles = {name: Role(r) if isinstance(r, str) else r for name, r in self.roles.items()}
        for name, r in roles.items():
            if not isinstance(r, Role):
                raise TypeError(f"mode '{self.name}': role '{name}' is a {type(r).__name__}, not a Role")
        object.__setattr__(self, "roles", roles)

    def load_report(self) -> ReportSpec:
        return load_ref(self.report)

    def load_item_table(self) -> TableSpec[Any]:
        return load_ref(self.item_table)

    def load_flows(self) -> dict[str, Any]:
        return {short: load_ref(ref) for short, ref in self.flows.items()}

    def smoke_steps(self, work: Path) -> list[SmokeStep]:
        """Its smoke scenario into ``work``: its own, or worked out from its settings and samples (``smoke``)."""
        if self.smoke is None:
            if not self.flows:
                return []
            return derived_smoke(self, work)
        return list(load_ref(self.smoke)(work))

    def load_schedules(self) -> list[Schedule]:
        return list(load_ref(self.schedules)()) if self.schedules is not None else []

    def load_releases(self) -> list[Any]:
        """Its releases (``prompts.releases.Release``), none for a benchmark that published no code."""
        if self.releases is None:
            return []
        found = load_ref(self.releases)
        return list(found) if isinstance(found, list | tuple) else [found]


_modes: dict[str, BenchmarkMode] = {}
_discovered = False
_lock = threading.Lock()


def broken_rules(mode: BenchmarkMode) -> list[str]:
    """What a mode must satisfy, each rule by name, checked as it is registered from its spec alone (nothing
    imported): a newcomer reads the rule here, not in a shared test failing later.

    - ``checks``: a check is for one of the mode's flows (a misspelt flow name would leave its flow unchecked);
    - ``run-command``: ``RunCommand`` makes ``run`` from the mode's one flow; a mode with several gives
      ``Commands`` naming each;
    - ``smoke``: a mode with flows has a smoke scenario, on two systems per item, one a model: the hardening
      tests (kills and resumes, faults, the secrets scan) run every registered mode's. It gives its own
      (``smoke=smoke_run(...)``), or one is worked out from its settings and samples (``flows.kit.front.smoke``);
    - ``name`` and ``roles`` (``register``): one mode of a name, and a role name belongs to one mode."""
    broken = []
    stray = sorted(set(mode.checks) - set(mode.flows))
    if stray:
        broken.append(f"rule 'checks': checks {stray} are for no flow of the mode (its flows: "
                      f"{', '.join(sorted(mode.flows)) or 'none'})")
    if isinstance(mode.commands, RunCommand) and len(mode.flows) != 1:
        broken.append(f"rule 'run-command': RunCommand runs the mode's one flow, and it has {len(mode.flows)}: "
                      "give Commands(name, {command: FlowCommand(flow), ...}) instead")
    if mode.flows and mode.smoke is None and (problem := derivable(mode)):
        broken.append(f"rule 'smoke': the hardening tests run every registered mode's smoke scenario, and "
                      f"none can be worked out for this one: {problem}")
    return broken


def register(mode: BenchmarkMode) -> BenchmarkMode:
    """Add a mode. A second, different mode of the same name, or a role another mode already declares, is an
    error: one would silently shadow the other; so is a mode that breaks a rule of ``broken_rules``. Registering
    the same spec again is harmless. The installed modes are found first, so a mode registered before anything
    asked for them is checked against them too."""
    broken = broken_rules(mode)
    if broken:
        raise ValueError(f"mode '{mode.name}' breaks {'; '.join(broken)}")
    _discover()
    with _lock:
        held = _modes.get(mode.name)
        if held is not None and held != mode:
            raise ValueError(f"two benchmark modes are called '{mode.name}'")
        for other in _modes.values():
            shared = sorted(set(other.roles) & set(mode.roles)) if other.name != mode.name else []
            if shared:
                raise ValueError(f"mode '{mode.name}' declares role '{shared[0]}', which mode '{other.name}' "
                                 "declares already: a role name belongs to one mode")
        _modes[mode.name] = mode
    return mode


def unregister(name: str) -> None:
    """Remove a mode (tests that register a toy mode clean up after themselves)."""
    with _lock:
        _modes.pop(name, None)


def _discover() -> None:
    global _discovered
    with _lock:
        if _discovered:
            return
        _discovered = True
    for ep in entry_points(group=ENTRY_POINTS):
        mode = ep.load()
        if not isinstance(mode, BenchmarkMode):
            raise TypeError(f"entry point {ep.name} ({ep.value}) is not a BenchmarkMode")
        register(mode)


def modes() -> dict[str, BenchmarkMode]:
    _discover()
    with _lock:
        return dict(sorted(_modes.items()))


def get_mode(name: str) -> BenchmarkMode:
    """The mode called ``name``; an unknown name is an input error listing the modes there are."""
    known = modes()
    if name not in known:
        raise unknown_name("benchmark mode", name, known)
    return known[name]


def builtin_roles() -> set[str]:
    """Every role some registered mode declares: a models file may leave these out."""
    return {role for mode in modes().values() for role in mode.roles}


def mode_of_module(module: str) -> str | None:
    """The mode whose commands live in ``module`` (a command knows its own module), or None."""
    for mode in modes().values():  # a spec's commands are a reference, or declared (in <package>.commands)
        held = mode.commands.partition(":")[0] if isinstance(mode.commands, str) else f"{mode.package}.commands"
        if held == module:
            return mode.name
    return None


def mode_of_flow(flow: str) -> str | None:
    """The mode that has a flow of this short name (what a run's manifest records), or None."""
    return next((mode.name for mode in modes().values() if flow in mode.flows), None)


def role_settings() -> dict[str, tuple[str, Role]]:
    """Every role some registered mode declares, with that mode's name and its Role."""
    return {role: (mode.name, declared) for mode in modes().values() for role, declared in mode.roles.items()}


def models_config(models_file: str | None) -> ModelsConfig:
    """The models file (a path, a preset's name, or None for the built-in one) read and checked, with every
    mode's own role settings beneath it.

    A run reads it once, as it starts, and carries it (``run_models``); this reads the file every time, so a
    process that serves runs for days sees an edited file on its next run."""
    from rpbench.tasks.llm.config import load_models_config

    return load_models_config(models_file, roles=role_settings())


def run_models(models_file: str | None) -> ModelsConfig:
    """The models configuration of the run this code is part of, as the run read it when it started (the run's
    context carries it into every stage's thread and task); read here only outside a run, or for another file."""
    from rpbench.tasks.llm.run_context import current_run

    return current_run().models_for(models_file) or models_config(models_file)


def models_file_digest(models_file: str | None) -> str:
    """SHA-256 of the models file a run read (the manifest records it beside the resolved settings)."""
    import hashlib

    from rpbench.tasks.llm.config import models_path

    return hashlib.sha256(models_path(models_file).read_bytes()).hexdigest()


def annotation_kinds() -> dict[str, tuple[BenchmarkMode, Ref]]:
    """Every annotation kind the registered modes offer, with the mode offering it."""
    kinds: dict[str, tuple[BenchmarkMode, Ref]] = {}
    for mode in modes().values():
        for kind, ref in mode.annotation.items():
            if kind in kinds:
                raise ValueError(f"annotation kind '{kind}' is offered by modes '{kinds[kind][0].name}' and "
                                 f"'{mode.name}'")
            kinds[kind] = (mode, ref)
    return kinds
