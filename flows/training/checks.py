"""Training's input checks, run by the command before any flow starts (and by the flow itself).

Nothing here imports Prefect or the gateway, so bad data or an unknown base model is one line at once; torch
and transformers only for the last check (the LoRA targets against the base's modules, its weights unread)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rpbench.flows.kit.front.registry import load_ref, modes, run_models
from rpbench.flows.training.settings import TrainSettings
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm.local.models import (
    EMBEDDED,
    local_model,
    local_name,
    register_local_models,
    split_adapter,
    weights_path,
)
from rpbench.tasks.training.data import mix, parse_mix
from rpbench.tasks.training.recipe import recipe
from rpbench.tasks.training.sources import TrainingRequest, TrainingSource
from rpbench.tasks.training.targets import check_targets, module_names


@dataclass(frozen=True)
class Inputs:
    sources: dict[str, list[str]]  # mode -> the data paths its training source reads
    files: list[str]  # every file whose content decides the data (a changed file is a change)
    request: TrainingRequest
    base: str  # the base model's local name


def training_sources() -> dict[str, TrainingSource]:
    """The training source of every registered mode that offers one."""
    return {mode.name: load_ref(mode.training_data) for mode in modes().values() if mode.training_data is not None}


def _offered(sources: dict[str, TrainingSource]) -> str:
    return "; ".join(f"{src.what} ({name})" for name, src in sources.items()) or "none"


def claim(paths: list[str], request: TrainingRequest) -> dict[str, list[str]]:
    """Each data path given to the mode whose training source reads it."""
    sources = training_sources()
    out: dict[str, list[str]] = {}
    for p in paths:
        if not Path(p).exists():
            raise InputError(f"{p}: no such file or folder")
        owners = [name for name, src in sources.items() if src.claims(Path(p), request)]
        if not owners:
            raise InputError(f"--data: {p}: no benchmark mode reads this as training data (they read: "
                             f"{_offered(sources)})")
        if len(owners) > 1:
            raise InputError(f"--data: {p}: both {' and '.join(owners)} read this as training data; give files "
                             "or folders of one kind")
        out.setdefault(owners[0], []).append(p)
    return out


def evaluator(path: str, request: TrainingRequest) -> str:
    """The function that evaluates base and adapter side by side on ``path`` (--eval-bench), by reference."""
    sources = {name: src for name, src in training_sources().items() if src.evaluate is not None}
    for src in sources.values():
        if Path(path).exists() and src.claims(Path(path), request):
            return str(src.evaluate)
    raise InputError(f"--eval-bench: {path}: not something a benchmark mode evaluates (they evaluate: "
                     f"{_offered(sources)})")


def base_name(s: TrainSettings) -> str:
    """The base's local model name; anything else is an input error."""
    config = run_models(s.models_file)
    register_local_models(config.local_models)
    name = local_name(s.base)
    if name is None:
        raise InputError(f"--base: '{s.base}' is not a local model (local/<name>): training needs the weights")
    if split_adapter(name)[1] is not None:
        raise InputError(f"--base: '{s.base}' already has an adapter; train on its base model")
    known = [EMBEDDED, *config.local_models]
    if name not in known:
        raise InputError(f"--base: unknown local model '{name}' (known: {', '.join(known)})")
    return name


def check_train(s: TrainSettings) -> Inputs:
    """Every input error before anything runs: the data paths, the profiles, the mix, the preset, the base."""
    recipe(s.preset, s.max_steps)
    parse_mix(s.mix)
    if s.mix and s.objective == "dpo":
        raise InputError("--mix: mixes the kinds of sft samples; dpo's preference pairs are of one kind")
    request = TrainingRequest(tuple(s.parts), tuple(s.profiles), s.objective)
    claimed = claim(s.data, request)
    sources = training_sources()
    if s.objective == "dpo":
        for name, paths in claimed.items():
            if sources[name].pairs is None:
                with_pairs = " or ".join(src.what for src in sources.values() if src.pairs is not None)
                raise InputError(f"--data: {paths[0]}: preference pairs come from {with_pairs}, not "
                                 f"{sources[name].what}")
    files = [f for name, paths in claimed.items() for f in sources[name].check(paths, request)]
    if s.mix:
        # The data's kinds decide whether a mix can be kept (a kind absent, every kind weighted 0): read them
        # now, so that is one line here rather than a failed flow.
        mix([x for name, paths in claimed.items() for x in sources[name].samples(paths, request)],
            parse_mix(s.mix), s.seed)
    if s.eval_bench:
        evaluator(s.eval_bench, request)
    base = base_name(s)
    # Last, as it imports torch: the LoRA targets against the base's own modules, before its weights load.
    check_targets(s.targets, module_names(weights_path(local_model(base))), s.base)
    return Inputs(claimed, files, request, base)
