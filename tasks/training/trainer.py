"""LoRA training with trl's SFT and DPO trainers over peft: no loop, loss mask or checkpointing of our own.

trl tokenises prompt-completion data with the model's chat template and masks the prompt out of the loss
(``completion_only_loss``); the Trainer checkpoints every ``save_steps`` and resumes from the last checkpoint
in the run's checkpoint folder, so a killed run continues where it stopped. The adapter is saved into a
temporary folder and renamed into place: it exists whole or not at all. The device is chosen at run time
(CUDA with bf16 where the card has it, else the CPU).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rpbench import prompts
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.training.recipe import LoraOptions, Recipe
from rpbench.tasks.training.records import LossPoint, PreferencePair, SftSample

log = logging.getLogger("rpbench.training")
Objective = Literal["sft", "dpo"]
Template = Literal["chat", "alpaca"]
OnStep = Callable[[int, int], Any] | None
ADAPTER_TEMPLATE = "rpbench_template.txt"  # which prompt layout an adapter was trained with


@dataclass(frozen=True)
class Outcome:
    losses: list[LossPoint]
    steps: int
    tokens: int  # input tokens the trainer saw (prompt and reply; padding excluded)
    seconds: float
    resumed_from: str | None  # the checkpoint the run continued from, if it was killed before
    too_long: int = 0  # training rows trl left out because they do not fit in the recipe's max_length


def device() -> tuple[str, bool]:
    """("cuda", bf16 supported) on a GPU, else ("cpu", False)."""
    import torch

    if torch.cuda.is_available():
        return "cuda", bool(torch.cuda.is_bf16_supported())
    return "cpu", False


def chat_template(template: Template, language: str) -> str | None:
    """The Jinja chat template of ``template`` (None: keep the base model's own)."""
    if template == "chat":
        return None
    return prompts.source(f"training/{template}", language)


def load_base(base: Path, template: Template, language: str) -> tuple[Any, Any]:
    """The base model (float32 on the CPU, bf16 on a capable GPU) and its tokenizer with ``template``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where, bf16 = device()
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    custom = chat_template(template, language)
    if custom is not None:
        tokenizer.chat_template = custom
    if tokenizer.chat_template is None:
        raise ValueError(f"{base}: the model has no chat template; train with --template alpaca")
    model: Any = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.bfloat16 if bf16 else torch.float32)
    return model.to(where), tokenizer


def sft_rows(samples: Sequence[SftSample]) -> list[dict[str, Any]]:
    """Conversational prompt-completion rows: trl renders them with the chat template, loss on the reply."""
    return [{"prompt": [t.model_dump() for t in s.prompt],
             "completion": [{"role": "assistant", "content": s.response}]} for s in samples]


def dpo_rows(pairs: Sequence[PreferencePair]) -> list[dict[str, Any]]:
    return [{"prompt": [t.model_dump() for t in p.prompt],
             "chosen": [{"role": "assistant", "content": p.chosen}],
             "rejected": [{"role": "assistant", "content": p.rejected}]} for p in pairs]


def _arguments(objective: Objective, recipe: Recipe, checkpoints: Path, seed: int, evaluate: bool) -> Any:
    from trl import DPOConfig, SFTConfig

    where, bf16 = device()
    common: dict[str, Any] = dict(
        output_dir=str(checkpoints), learning_rate=recipe.learning_rate, num_train_epochs=recipe.epochs,
        max_steps=recipe.max_steps or -1, per_device_train_batch_size=recipe.batch_size,
        per_device_eval_batch_size=recipe.batch_size, gradient_accumulation_steps=recipe.accumulation,
        lr_scheduler_type=recipe.scheduler, warmup_steps=recipe.warmup_ratio, optim="adamw_torch",
        max_length=recipe.max_length, logging_steps=recipe.logging_steps, logging_first_step=True,
        save_strategy="steps", save_steps=recipe.save_steps, save_total_limit=2,
        eval_strategy="steps" if evaluate else "no", eval_steps=recipe.eval_steps if evaluate else None,
        seed=seed, data_seed=seed, use_cpu=where == "cpu", bf16=bf16, report_to="none", disable_tqdm=True,
        include_num_input_tokens_seen="non_padding", dataloader_pin_memory=where == "cuda",
        gradient_checkpointing=recipe.checkpointing,
    )
    if objective == "dpo":
        return DPOConfig(beta=recipe.dpo_beta, **common)
    return SFTConfig(completion_only_loss=True, **common)


def build_trainer(objective: Objective, model: Any, tokenizer: Any, train_rows: list[dict[str, Any]],
                  heldout_rows: list[dict[str, Any]], recipe: Recipe, lora: LoraOptions, checkpoints: Path,
                  seed: int, callbacks: Sequence[Any] = ()) -> Any:
    """trl's trainer for ``objective`` with a LoRA adapter on ``model`` (the reference model of DPO is the
    base with the adapter switched off: peft does that, no second copy is loaded)."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import set_seed
    from trl import DPOTrainer, SFTTrainer

    set_seed(seed)
    peft_config = LoraConfig(r=lora.rank, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                             target_modules=list(lora.targets), task_type="CAUSAL_LM")
    args = _arguments(objective, recipe, checkpoints, seed, evaluate=bool(heldout_rows))
    kind = DPOTrainer if objective == "dpo" else SFTTrainer
    return kind(model=model, args=args, train_dataset=Dataset.from_list(train_rows),
                eval_dataset=Dataset.from_list(heldout_rows) if heldout_rows else None,
                processing_class=tokenizer, peft_config=peft_config, callbacks=list(callbacks))


def _progress_callback(on_step: OnStep) -> Any:
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if on_step is not None:
                on_step(state.global_step, state.max_steps)

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:
            shown = {k: round(v, 4) for k, v in (logs or {}).items() if k in ("loss", "eval_loss", "learning_rate")}
            if shown:
                log.info("step %d/%d: %s", state.global_step, state.max_steps,
                         ", ".join(f"{k} {v}" for k, v in shown.items()))

    return Progress()


def losses(log_history: Sequence[dict[str, Any]]) -> list[LossPoint]:
    """The trainer's log as loss points: ``loss`` on the training data, ``eval_loss`` on the held-out split."""
    out = []
    for entry in log_history:
        for key, split in (("loss", "train"), ("eval_loss", "heldout")):
            if key in entry:
                out.append(LossPoint(step=int(entry["step"]), epoch=float(entry.get("epoch", 0.0)),
                                     split=split, loss=float(entry[key])))  # type: ignore[arg-type]
    return out


def save_adapter(trainer: Any, tokenizer: Any, out: Path, template: Template) -> None:
    """The adapter, its tokenizer (with the chat template it was trained with) and the template's name,
    written to a temporary folder and renamed over ``out``."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        trainer.model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        (tmp / ADAPTER_TEMPLATE).write_text(template + "\n", encoding="utf-8")
        old = out.with_name(f".{out.name}.{os.getpid()}.old")
        if out.exists():
            out.replace(old)
        tmp.replace(out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def train(objective: Objective, base: Path, train_rows: list[dict[str, Any]], heldout_rows: list[dict[str, Any]],
          adapter: Path, checkpoints: Path, recipe: Recipe, lora: LoraOptions, template: Template, language: str,
          seed: int, on_step: OnStep = None) -> Outcome:
    """Train a LoRA adapter on ``base`` (a transformers folder), resuming from the last checkpoint there is."""
    from transformers.trainer_utils import get_last_checkpoint

    if not train_rows:
        raise ValueError("no training rows")
    started = time.monotonic()
    model, tokenizer = load_base(base, template, language)
    from transformers import PrinterCallback

    trainer = build_trainer(objective, model, tokenizer, train_rows, heldout_rows, recipe, lora, checkpoints, seed,
                            [_progress_callback(on_step)])
    trainer.remove_callback(PrinterCallback)  # it prints raw dicts; the progress callback logs readable lines
    kept = len(trainer.train_dataset)
    if kept == 0:  # trl leaves out rows that do not fit; with none left there is nothing to learn
        raise InputError(f"none of the {len(train_rows)} training rows fits in {recipe.max_length} tokens with its "
                         "reply (choose a preset with longer lengths)")
    last = get_last_checkpoint(str(checkpoints)) if checkpoints.is_dir() else None
    if last:
        log.info("resuming from %s", last)
    trainer.train(resume_from_checkpoint=last)
    save_adapter(trainer, tokenizer, adapter, template)
    state = trainer.state
    return Outcome(losses=losses(state.log_history), steps=int(state.global_step),
                   tokens=int(state.num_input_tokens_seen or 0), seconds=time.monotonic() - started,
                   resumed_from=last, too_long=len(train_rows) - kept)
