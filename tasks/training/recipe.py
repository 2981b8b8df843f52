"""Named training recipes and LoRA options: the figures a run is trained with, kept in one place."""

from __future__ import annotations

from dataclasses import dataclass, field

from rpbench.tasks.core.errors import InputError, unknown_name


@dataclass(frozen=True)
class Recipe:
    """Optimiser, schedule, batch and lengths. ``max_steps`` (when set) ends training before ``epochs``."""

    learning_rate: float
    epochs: float
    batch_size: int
    accumulation: int
    max_length: int  # prompt and reply together, in tokens
    warmup_ratio: float = 0.04
    scheduler: str = "cosine"
    max_steps: int | None = None
    save_steps: int = 200  # a checkpoint every this many optimiser steps (a killed run resumes from the last)
    eval_steps: int = 200
    logging_steps: int = 10
    dpo_beta: float = 0.1
    # Recompute activations in the backward pass: less memory for a 7B model, about a third more time; off for
    # small models, where memory is not what limits.
    checkpointing: bool = False


PRESETS: dict[str, Recipe] = {
    # RoleLLaMA (RoleLLM, section 5): AdamW at 5e-5, cosine with 4% warm-up, batch 4 with 2 steps of gradient
    # accumulation, 5 epochs, 512 tokens of prompt and 512 of reply.
    "rolellama": Recipe(learning_rate=5e-5, epochs=5, batch_size=4, accumulation=2, max_length=1024,
                        checkpointing=True),
    # Minutes on a 2-core CPU with the embedded 135M model: a few dozen short steps, a higher rate so that so
    # few steps still move the loss, room for a FURINA test-turn prompt, a checkpoint and a held-out loss every
    # 10 steps.
    "small": Recipe(learning_rate=3e-4, epochs=1, batch_size=2, accumulation=1, max_length=1024, max_steps=30,
                    save_steps=10, eval_steps=10, logging_steps=1),
}


def recipe(name: str, max_steps: int | None = None) -> Recipe:
    if name not in PRESETS:
        raise InputError(f"--preset: {unknown_name('preset', name, PRESETS)}")
    chosen = PRESETS[name]
    if max_steps is None:
        return chosen
    # A short run still checkpoints half-way, so that a kill loses at most half of it.
    every = max(1, max_steps // 2)
    return Recipe(**{**chosen.__dict__, "max_steps": max_steps,
                     "save_steps": min(chosen.save_steps, every), "eval_steps": min(chosen.eval_steps, max_steps)})


@dataclass(frozen=True)
class LoraOptions:
    """LoRA on the attention projections by default (rank 8, alpha 32), as RoleLLaMA was tuned."""

    rank: int = 8
    alpha: int = 32
    dropout: float = 0.05
    targets: tuple[str, ...] = field(default=("q_proj", "v_proj"))
