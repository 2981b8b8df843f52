"""A mode's smoke scenario when it gives none: its ``run`` command on its shipped samples, worked out from its
settings.

The hardening tests (kills and resumes, faults, the secrets scan), the plan test and the viewer test run every
registered mode's scenario. A simple mode (one flow behind ``RunCommand``, ``EvalSettings``) does not have to
write its scenario out. The scenario is ``rpbench <mode> run``, with:

- each required field of its settings given the sample named after the field, ``samples/<mode>/<field>.*``
  (``--questions samples/quiz/questions.jsonl``);
- its role as the model under test (``--model``): the settings' ``role`` when they name one, else the mode's
  first role;
- the sample answers, ``samples/<mode>/answers.*``, as a second system (``--answers sample=...``), so every item
  has a model's reply and a word of its own;
- ``--out <work>/<mode>`` and few bootstrap resamples.

A missing sample is an error that names the file expected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rpbench.flows.kit.front.refs import load_ref
from rpbench.flows.kit.front.run_command import RunCommand
from rpbench.flows.kit.front.settings import EvalSettings, flag_of


class BenchmarkMode(Protocol):
    """What a scenario is worked out from: a mode's spec (``registry.BenchmarkMode``, which imports this)."""

    @property
    def name(self) -> str: ...
    @property
    def roles(self) -> Mapping[str, Any]: ...
    @property
    def flows(self) -> Mapping[str, Any]: ...
    @property
    def settings(self) -> Mapping[str, Any]: ...
    @property
    def commands(self) -> Any: ...


@dataclass(frozen=True)
class SmokeStep:
    """One command of a mode's smoke scenario: ``rpbench *args``, writing its tables into ``out``.

    ``uses_models``: the command calls models, so a harness adds ``--models-file`` and ``--cache`` to it.
    """

    name: str
    args: tuple[str, ...]
    out: Path
    uses_models: bool = True


def smoke_run(mode: str, *args: str) -> Callable[[Path], list[SmokeStep]]:
    """A mode's ``smoke`` when its scenario is one command: ``rpbench <mode> run *args`` into ``<work>/<mode>``,
    with few bootstrap resamples."""
    def steps(work: Path) -> list[SmokeStep]:
        out = work / mode
        return [SmokeStep(mode, (mode, "run", *args, "--out", str(out), "--resamples", "200"), out)]

    steps.__doc__ = f"`rpbench {mode} run {' '.join(args)}`"
    return steps


def samples_folder(mode: BenchmarkMode) -> Path:
    from rpbench.samples import sample_path

    return sample_path(mode.name)


def _sample(mode: BenchmarkMode, stem: str) -> Path | None:
    """The one sample file of the mode named ``stem`` (any extension), or None."""
    folder = samples_folder(mode)
    found = sorted(p for p in folder.glob(f"{stem}.*") if p.is_file()) if folder.is_dir() else []
    if len(found) > 1:
        raise ValueError(f"mode '{mode.name}': rule 'smoke': {len(found)} samples are named {stem} in {folder} "
                         f"({', '.join(p.name for p in found)}); keep one, or give smoke=smoke_run(...)")
    return found[0] if found else None


def derived_smoke(mode: BenchmarkMode, work: Path) -> list[SmokeStep]:
    """The scenario described above, for ``mode`` into ``work``; a ValueError naming the rule and what is
    missing when it cannot be worked out."""
    problem = derivable(mode)
    if problem:
        raise ValueError(f"mode '{mode.name}': rule 'smoke': {problem}")
    flow = next(iter(mode.flows))
    settings: type[EvalSettings] = load_ref(mode.settings[flow])
    if not issubclass(settings, EvalSettings):
        raise ValueError(f"mode '{mode.name}': rule 'smoke': a scenario is worked out for EvalSettings, and "
                         f"{settings.__name__} is not one: give smoke=smoke_run(...)")
    args: list[str] = [mode.name, "run"]
    for name, info in settings.model_fields.items():
        if not info.is_required():
            continue
        sample = _sample(mode, name)
        if sample is None:
            raise ValueError(f"mode '{mode.name}': rule 'smoke': its required setting {flag_of(settings, name)} "
                             f"needs a sample, {samples_folder(mode)}/{name}.<ext>, or give smoke=smoke_run(...)")
        args += [flag_of(settings, name), str(sample)]
    role = getattr(settings, "role", "") or next(iter(mode.roles))
    answers = _sample(mode, "answers")
    if answers is None:
        raise ValueError(f"mode '{mode.name}': rule 'smoke': a scenario puts a model and sample answers on every "
                         f"item: add {samples_folder(mode)}/answers.jsonl ({settings.answers_layout}), or give "
                         "smoke=smoke_run(...)")
    out = work / mode.name
    args += ["--model", role, "--answers", f"sample={answers}", "--out", str(out), "--resamples", "200"]
    return [SmokeStep(mode.name, tuple(args), out)]


def derivable(mode: BenchmarkMode) -> str:
    """Why ``mode``'s scenario cannot be worked out from its spec alone ("" when it can): checked as the mode is
    registered, without importing anything of it."""
    if not isinstance(mode.commands, RunCommand) or len(mode.flows) != 1:
        return ("a scenario is worked out only for a mode whose one flow is its run command (RunCommand); give "
                "smoke=smoke_run(name, *args) on shipped samples, a model and a file of answers on each item")
    flow = next(iter(mode.flows))
    if flow not in mode.settings:
        return (f"a scenario is worked out from the settings of its flow, and settings={{'{flow}': ...}} is not "
                "given; give it, or smoke=smoke_run(...)")
    if not mode.roles:
        return "a scenario asks one of the mode's roles, and it declares none"
    if not samples_folder(mode).is_dir():
        return (f"a scenario runs on the mode's samples, and {samples_folder(mode)} is not there; add them (a "
                "sample per required setting, named after it, and answers.jsonl), or give smoke=smoke_run(...)")
    return ""
