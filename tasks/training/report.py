"""The small report of a training run: its figures, the loss curves as a plot, and where the adapter is."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from rpbench.tasks.reports.render import fmt, png
from rpbench.tasks.training.records import LossPoint


def loss_plot(points: Sequence[LossPoint]) -> bytes:
    """Training and held-out loss by step, as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for split, style in (("train", "-"), ("heldout", "o--")):
        got = sorted((p.step, p.loss) for p in points if p.split == split)
        if got:
            ax.plot([s for s, _ in got], [v for _, v in got], style, label=split)
    ax.set_xlabel("optimiser step")
    ax.set_ylabel("loss")
    ax.legend()
    ax.grid(alpha=0.3)
    return base64.b64decode(png(fig))


def _first_last(points: Sequence[LossPoint], split: str) -> tuple[float | None, float | None]:
    got = [p.loss for p in sorted(points, key=lambda p: p.step) if p.split == split]
    return (got[0], got[-1]) if got else (None, None)


def report_markdown(summary: Mapping[str, Any], points: Sequence[LossPoint], plot_name: str) -> str:
    train0, train1 = _first_last(points, "train")
    held0, held1 = _first_last(points, "heldout")
    lines = [
        f"# Training: {summary['objective']} on {summary['base']}",
        "",
        f"- adapter: `{summary['model']}`",
        f"- data: {summary['train_rows']} training rows, {summary['heldout_rows']} held out "
        f"({', '.join(f'{k} {v}' for k, v in summary['by_kind'].items())})"
        + (f"; {summary['too_long']} left out as longer than the recipe's max_length" if summary.get("too_long")
           else ""),
        f"- recipe: {summary['preset']} (template {summary['template']}, LoRA rank {summary['lora_rank']}, "
        f"alpha {summary['lora_alpha']}, on {', '.join(summary['targets'])}), seed {summary['seed']}",
        f"- {summary['steps']} steps, {summary['tokens']} tokens in {fmt(summary['seconds'], 0)} s "
        f"({fmt(summary['tokens_per_s'], 1)} tokens/s on {summary['device']})"
        + (f"; resumed from {summary['resumed_from']}" if summary.get("resumed_from") else ""),
        f"- training loss: {fmt(train0, 3)} at the first logged step, {fmt(train1, 3)} at the last",
        f"- held-out loss: {fmt(held0, 3)} first, {fmt(held1, 3)} last" if held0 is not None else
        "- held-out loss: none (no held-out split)",
        "",
        f"![loss by step]({plot_name})",
        "",
        "The loss of each split is in `losses.parquet` (step, epoch, split, loss).",
    ]
    return "\n".join(lines) + "\n"
