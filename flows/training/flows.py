"""The train-lora flow: data -> train -> register, then (optionally) an evaluation of the base model and the
adapter side by side, by the mode whose benchmark --eval-bench names.

Training is one stage: trl's trainer checkpoints inside it (``OUT/checkpoints/<run key>``), so a killed run
resumes from its last checkpoint, and a finished one is cached like any stage (same data and recipe: nothing
is trained again).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from prefect import flow

from rpbench.flows.kit.front.registry import load_ref
from rpbench.flows.kit.running.finish import failed_state, finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, file_digest, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.running.ui import publish_markdown
from rpbench.flows.training.checks import check_train, evaluator, training_sources
from rpbench.flows.training.settings import TrainSettings
from rpbench.storage.tables import atomic_write_bytes, read_records
from rpbench.tasks.core.errors import InputError, RunFailed
from rpbench.tasks.llm.local.hf_weights import transformers_folder
from rpbench.tasks.llm.local.models import (
    ADAPTER_MARK,
    local_model,
    weights_path,
)
from rpbench.tasks.training.data import hold_out, main_language, mix, parse_mix
from rpbench.tasks.training.recipe import LoraOptions, recipe
from rpbench.tasks.training.records import PreferencePair, SftSample
from rpbench.tasks.training.report import loss_plot, report_markdown
from rpbench.tasks.training.sources import TrainingRequest
from rpbench.tasks.training.tables import LOSSES, PAIRS, SAMPLES
from rpbench.tasks.training.trainer import device, dpo_rows, sft_rows, train

log = logging.getLogger("rpbench.training")
ADAPTER = "adapter"


def _source_templates() -> list[str]:
    return [t for src in training_sources().values() for t in src.templates]


@stage("train-data", templates=_source_templates, inputs=("files",))
async def training_data(run: StageRun, sources: dict[str, list[str]], files: list[str], parts: list[str],
                        profiles: list[str], objective: str, mix_weights: dict[str, float], heldout: float,
                        seed: int) -> StageResult:
    request = TrainingRequest(tuple(parts), tuple(profiles), objective)
    offered = training_sources()
    if objective == "dpo":
        pairs: list[PreferencePair] = []
        ties = 0
        for name, paths in sources.items():
            make = offered[name].pairs
            assert make is not None  # checked before the flow started
            got, tied = make(paths)
            pairs, ties = pairs + got, ties + tied
        if not pairs:
            raise InputError(f"--data: no preference pairs in {', '.join(p for ps in sources.values() for p in ps)} "
                             "(every judged turn was a tie, or the benchmarks have no judged test turns)")
        pairs = hold_out(pairs, heldout, seed)
        run.write(PAIRS, pairs, final=True)
        return run.result(rows=len(pairs), ties_dropped=ties, heldout=sum(p.split == "heldout" for p in pairs),
                          chosen={side: sum(p.chosen_side == side for p in pairs) for side in ("source", "base")},
                          language=main_language(pairs), by_kind={"pairs": len(pairs)})
    samples: list[SftSample] = []
    for name, paths in sources.items():
        samples += offered[name].samples(paths, request)
    if not samples:
        raise InputError("--data: no training samples in the data given")
    before = len(samples)
    samples = hold_out(mix(samples, mix_weights, seed), heldout, seed)
    run.write(SAMPLES, samples, final=True)
    return run.result(rows=len(samples), mixed_out=before - len(samples),
                      heldout=sum(s.split == "heldout" for s in samples), language=main_language(samples),
                      by_kind={k: sum(s.kind == k for s in samples) for k in sorted({s.kind for s in samples})})


def run_key(rows: str, params: dict[str, Any]) -> str:
    """The checkpoint folder's name: the data's content and everything that shapes the training."""
    text = json.dumps({"rows": file_digest(rows), **params}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@stage("train-lora", templates=("training/",), inputs=("rows",))
async def train_lora(run: StageRun, rows: str, objective: str, base: str, preset: str, max_steps: int | None,
                     template: str, language: str, lora: dict[str, Any], seed: int, out: str) -> StageResult:
    options = LoraOptions(rank=lora["rank"], alpha=lora["alpha"], dropout=lora["dropout"],
                          targets=tuple(lora["targets"]))
    chosen = recipe(preset, max_steps)
    if objective == "dpo":
        got = read_records(rows, PAIRS)
        train_rows, held = dpo_rows([p for p in got if p.split == "train"]), dpo_rows(
            [p for p in got if p.split == "heldout"])
    else:
        samples = read_records(rows, SAMPLES)
        train_rows, held = sft_rows([s for s in samples if s.split == "train"]), sft_rows(
            [s for s in samples if s.split == "heldout"])
    key = run_key(rows, {"objective": objective, "base": base, "preset": preset, "max_steps": max_steps,
                         "template": template, "lora": lora, "seed": seed})
    checkpoints = Path(out) / "checkpoints" / key
    folder = transformers_folder(weights_path(local_model(base)))
    on_step = run.progress.track("training steps", chosen.max_steps or 0)
    done = await asyncio.to_thread(
        train, "dpo" if objective == "dpo" else "sft", folder, train_rows, held, run.final_folder / ADAPTER,
        checkpoints, chosen, options, "alpaca" if template == "alpaca" else "chat", language, seed, on_step)
    run.write(LOSSES, done.losses, final=True)
    atomic_write_bytes(run.final_folder / "losses.png", loss_plot(done.losses))
    run.tables["adapter"] = str(run.final_folder / ADAPTER / "adapter_config.json")
    run.tables["loss_plot"] = str(run.final_folder / "losses.png")
    return run.result(steps=done.steps, tokens=done.tokens, train_seconds=round(done.seconds, 1),
                      tokens_per_s=round(done.tokens / done.seconds, 1) if done.seconds else None,
                      resumed_from=done.resumed_from, device=device()[0], checkpoints=str(checkpoints),
                      train_rows=len(train_rows), heldout_rows=len(held), too_long=done.too_long)


@stage("train-register", inputs=("losses",))
async def register(run: StageRun, adapter: str, losses: str, base: str, summary: dict[str, Any]) -> StageResult:
    """The adapter as a model name (``local/<base>+adapter=<folder>``), a models file that binds it to the role
    ``tuned``, and the report."""
    model = f"local/{base}{ADAPTER_MARK}{adapter}"
    fragment = (f"# Written by rpbench train: the trained adapter as a role (rpbench furina eval --models-file THIS "
                f"--model tuned).\n[roles.tuned]\nmodel = \"{model}\"\n")
    atomic_write_bytes(run.final_folder / "models.toml", fragment.encode())
    atomic_write_bytes(run.final_folder / "model.txt", (model + "\n").encode())
    text = report_markdown({**summary, "model": model}, read_records(losses, LOSSES), "losses.png")
    atomic_write_bytes(run.final_folder / "report.md", text.encode())
    await publish_markdown("train-lora-report", text, f"training report: {model}")
    run.tables["report"] = str(run.final_folder / "report.md")
    run.tables["models_file"] = str(run.final_folder / "models.toml")
    return run.result(model=model)


# Not log_prints: dill (under datasets) reads globals by capturing what dis prints, and Prefect would take those
# prints for log lines. Progress and losses reach the log through the stage's progress and the trainer's callback.
@flow(name="rpbench-train-lora", log_prints=False)
@flow_body
def train_lora_flow(s: TrainSettings, stages: Stages) -> Any:
    """A LoRA adapter from RoleBench-layout data and built benchmarks (SFT, or DPO on the judge's preferences),
    registered as a local model; with --eval-bench, the base and the adapter evaluated side by side."""
    got = check_train(s)
    data = stages.run(training_data, sources=got.sources, files=got.files, parts=list(got.request.parts),
                      profiles=list(got.request.profiles), objective=s.objective, mix_weights=parse_mix(s.mix),
                      heldout=s.heldout, seed=s.seed, out=s.out)
    rows = data.path("pairs" if s.objective == "dpo" else "samples")
    lora = {"rank": s.lora_rank, "alpha": s.lora_alpha, "dropout": s.lora_dropout, "targets": list(s.targets)}
    trained = stages.run(train_lora, rows=rows, objective=s.objective, base=got.base, preset=s.preset,
                         max_steps=s.max_steps, template=s.template, language=data.summary["language"], lora=lora,
                         seed=s.seed, out=s.out)
    adapter = str((Path(s.out) / ADAPTER).resolve())
    summary = {"objective": s.objective, "base": s.base, "preset": s.preset, "template": s.template,
               "lora_rank": s.lora_rank, "lora_alpha": s.lora_alpha, "targets": list(s.targets), "seed": s.seed,
               "by_kind": data.summary["by_kind"], **{k: trained.summary[k] for k in (
                   "steps", "tokens", "tokens_per_s", "resumed_from", "device", "train_rows", "heldout_rows",
                   "too_long")},
               "seconds": trained.summary["train_seconds"]}
    registered = stages.run(register, adapter=adapter, losses=trained.path("losses"), base=got.base,
                            summary=summary, out=s.out)
    training = {**summary, "model": registered.summary["model"], "data": data.summary,
                "report": registered.path("report"), "models_file": registered.path("models_file")}
    manifest = finish_run(s.out, stages, s, "train-lora", training=training,
                          training_settings=s.recorded(s.out))
    if s.eval_bench and isinstance(manifest, dict):
        evaluate = load_ref(evaluator(s.eval_bench, got.request))
        try:
            manifest["evaluation"] = evaluate(s.eval_bench, [s.base, registered.summary["model"]],
                                              str(Path(s.out) / "eval"), s.models_file, s.cache)
        except RunFailed as failed:  # the side-by-side evaluation failed by the rule: so does the run
            return failed_state(failed)
    return manifest
