"""`rpbench train` and `rpbench merge`."""

from __future__ import annotations

from pathlib import Path

import typer

from rpbench.flows.kit.commands.settings_commands import settings_command, stages_line
from rpbench.flows.training.settings import MergeSettings, TrainSettings
from rpbench.tasks.reports.render import fmt


def train(s: TrainSettings) -> None:
    """Train a LoRA adapter (peft, trl) on RoleBench-layout data and built benchmarks: sft learns references and
    accepted replies with the loss on the reply only; dpo prefers what the builder's judge preferred. The
    adapter registers as local/<base>+adapter=<folder>, usable wherever a model is named. A killed run resumes
    from its last checkpoint."""
    from rpbench.flows.training.checks import check_train

    check_train(s)  # bad input fails here, before Prefect, torch or the gateway is even imported
    from rpbench.flows.kit.running.run import run_flow
    from rpbench.flows.training.flows import train_lora_flow

    manifest = run_flow(train_lora_flow, settings=s)
    t = manifest.get("training", {})
    typer.echo(f"data: {t['data']['rows']} rows ({', '.join(f'{k} {v}' for k, v in t['by_kind'].items())}), "
               f"{t['heldout_rows']} held out"
               + (f", {t['too_long']} left out as too long for the preset" if t.get("too_long") else ""))
    typer.echo(f"trained {t['steps']} steps, {t['tokens']} tokens in {fmt(t['seconds'], 0)} s "
               f"({fmt(t['tokens_per_s'], 1)} tokens/s on {t['device']})"
               + (f", resumed from {Path(t['resumed_from']).name}" if t.get("resumed_from") else ""))
    typer.echo(f"model: {t['model']}")
    typer.echo(f"models file binding it to the role 'tuned': {t['models_file']}")
    for row in (manifest.get("evaluation") or {}).get("leaderboard", []):
        typer.echo(f"eval {row['model']}: {fmt(row.get('score'), 1)} [{fmt(row.get('ci_low'), 1)}, "
                   f"{fmt(row.get('ci_high'), 1)}]")
    typer.echo(stages_line(manifest))
    typer.echo(f"report: {t['report']}")


def merge(s: MergeSettings) -> None:
    """Fold a trained adapter into its base weights and write a plain transformers folder (for vLLM or any
    server that loads transformers models)."""
    from rpbench.flows.kit.front.registry import run_models
    from rpbench.tasks.core.errors import InputError
    from rpbench.tasks.llm.local.hf_weights import transformers_folder
    from rpbench.tasks.llm.local.models import (
        check_adapter,
        local_model,
        local_name,
        register_local_models,
        split_adapter,
        weights_path,
    )
    from rpbench.tasks.training.merge import merge_adapter

    register_local_models(run_models(s.models_file).local_models)
    name = local_name(s.model)
    base, adapter = split_adapter(name) if name else (None, None)
    if base is None or adapter is None:
        raise InputError(f"--model: '{s.model}' is not local/<base>+adapter=<folder>")
    try:
        check_adapter(adapter)
        spec = local_model(base)
    except (KeyError, ValueError) as exc:
        raise InputError(f"--model: {exc}") from None
    out = merge_adapter(transformers_folder(weights_path(spec)), Path(adapter).expanduser(), Path(s.out))
    typer.echo(f"merged model: {out} (load it with transformers, or serve it with vLLM: vllm serve {out})")


def add_commands(app: typer.Typer) -> None:
    app.command("train")(settings_command(TrainSettings, train, plans=False))
    app.command("merge")(settings_command(MergeSettings, merge))
