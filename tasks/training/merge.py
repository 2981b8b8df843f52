"""A LoRA adapter merged into its base weights: one transformers folder that vLLM, TGI or llama.cpp's converter
load without peft."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def merge_adapter(base: Path, adapter: Path, out: Path) -> Path:
    """Write ``base`` (a transformers folder) with ``adapter`` folded in to ``out``, whole or not at all."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    # The adapter's tokenizer carries the chat template it was trained with.
    tokenizer = AutoTokenizer.from_pretrained(str(adapter if (adapter / "tokenizer_config.json").is_file() else base))
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        merged.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        shutil.rmtree(out, ignore_errors=True)
        tmp.replace(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out
