"""Training throughput of `rpbench train`'s trainer against a bare transformers + peft loop, measured in one run.

Both train the same LoRA (rank 8 on q_proj and v_proj) on the embedded model, on the same tokenised rows
(RoleBench-layout samples shipped with rpbench, the chat template, loss on the reply), the same batches
(the small preset: batch 2, no accumulation) and the same number of optimiser steps. The pipeline is the
trainer `rpbench train` runs (trl's SFTTrainer with its collator, logging, the progress callback and a
checkpoint half-way); the bare loop is forward, backward and AdamW, nothing else. Tokens per second count
the non-padding tokens of the batches over the time spent in the steps (model loading is left out of both).

Prints key=value lines; the headline figure (pipeline tokens/s over bare tokens/s) is last.
Usage: .venv/bin/python benchmarks/train.py [STEPS]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rpbench.tasks.llm.local.hf_weights import transformers_folder  # noqa: E402
from rpbench.tasks.llm.local.models import EMBEDDED, local_model, weights_path  # noqa: E402
from rpbench.tasks.modes.rolellm.training import rolebench_samples  # noqa: E402
from rpbench.tasks.training.recipe import LoraOptions, recipe  # noqa: E402
from rpbench.tasks.training.trainer import build_trainer, load_base, sft_rows  # noqa: E402


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


def pipeline(base: Path, rows: list[dict], steps: int, work: Path) -> tuple[float, int, list[list[int]]]:
    """Seconds in trainer.train(), tokens seen, and the tokenised rows (for the bare loop)."""
    model, tokenizer = load_base(base, "chat", "en")
    trainer = build_trainer("sft", model, tokenizer, rows, [], recipe("small", steps), LoraOptions(),
                            work / "checkpoints", seed=0)
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    tokenised = [(r["input_ids"], r["labels"]) for r in trainer.train_dataset]  # labels: -100 on the prompt
    started = time.perf_counter()
    trainer.train()
    return time.perf_counter() - started, int(trainer.state.num_input_tokens_seen), tokenised


def bare(base: Path, tokenised: list, steps: int, batch: int, lr: float) -> tuple[float, int]:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    lora = LoraOptions()
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32),
                           LoraConfig(r=lora.rank, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                                      target_modules=list(lora.targets), task_type="CAUSAL_LM"))
    model.train()
    optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    order = torch.randperm(len(tokenised), generator=torch.Generator().manual_seed(0)).tolist()
    tokens, started = 0, time.perf_counter()
    for step in range(steps):
        picked = [tokenised[order[(step * batch + k) % len(order)]] for k in range(batch)]
        width = max(len(ids) for ids, _ in picked)
        ids = torch.zeros(batch, width, dtype=torch.long)
        labels = torch.full((batch, width), -100, dtype=torch.long)
        mask = torch.zeros(batch, width, dtype=torch.long)
        for k, (row, row_labels) in enumerate(picked):
            ids[k, :len(row)] = torch.tensor(row)
            mask[k, :len(row)] = 1
            labels[k, :len(row)] = torch.tensor(row_labels)
            tokens += len(row)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()
    return time.perf_counter() - started, tokens


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    base = transformers_folder(weights_path(local_model(EMBEDDED)))
    samples = rolebench_samples([str(ROOT / "samples" / "rolellm" / "rolebench" / "rolebench-eng")], ["test"], [])
    rows = sft_rows(samples)
    chosen = recipe("small", steps)
    say("model", EMBEDDED)
    say("rows", len(rows))
    say("steps", steps)
    say("batch", chosen.batch_size)
    with tempfile.TemporaryDirectory() as work:
        p_seconds, p_tokens, tokenised = pipeline(base, rows, steps, Path(work))
    b_seconds, b_tokens = bare(base, tokenised, steps, chosen.batch_size, chosen.learning_rate)
    p_rate, b_rate = p_tokens / p_seconds, b_tokens / b_seconds
    say("pipeline_tokens", p_tokens)
    say("pipeline_seconds", round(p_seconds, 1))
    say("pipeline_tokens_per_s", round(p_rate, 1))
    say("bare_tokens", b_tokens)
    say("bare_seconds", round(b_seconds, 1))
    say("bare_tokens_per_s", round(b_rate, 1))
    say("pipeline_over_bare_tokens_per_s", round(p_rate / b_rate, 3))


if __name__ == "__main__":
    main()
