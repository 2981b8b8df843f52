"""LoRA target modules checked against the base model's own layers before anything loads its weights.

peft matches a target against the end of each module's name ("q_proj" matches "model.layers.0.self_attn.q_proj").
A name that matches nothing fails inside peft only after the whole model is loaded; here the model is built on
torch's meta device from its config alone (no weights read, no memory for them) and the names are compared.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from rpbench.tasks.core.errors import InputError


@functools.cache
def module_names(weights: Path) -> tuple[str, ...]:
    """Every module name of the model ``weights`` holds (a transformers folder or a GGUF file), weights unread."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if weights.is_dir():
        config = AutoConfig.from_pretrained(str(weights))
    else:
        config = AutoConfig.from_pretrained(str(weights.parent), gguf_file=weights.name)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return tuple(name for name, _ in model.named_modules() if name)


def check_targets(targets: Sequence[str], names: Sequence[str], model: str) -> None:
    """An InputError naming the first target no module is called, and the layer names there are."""
    leaves = sorted({n.rsplit(".", 1)[-1] for n in names if not n.rsplit(".", 1)[-1].isdigit()})
    for target in targets:
        if not any(n == target or n.endswith("." + target) for n in names):
            raise InputError(f"--target {target}: no module of {model} is called that (its modules: "
                             f"{', '.join(leaves)})")
