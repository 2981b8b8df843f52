"""A transformers copy of a GGUF model: what training and LoRA adapters need.

llama.cpp runs the embedded model's GGUF fastest, but transformers marks a model it loaded from GGUF as
quantized and will not train it. Its weights are de-quantized on loading anyway, so they are written once
as an ordinary transformers folder (float32 safetensors and the tokenizer), cached by the source file under
``cache_dir()/hf``, built in a temporary folder and renamed into place so a killed conversion leaves nothing
half-written.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from rpbench.tasks.core.paths import cache_dir, one_writer

log = logging.getLogger("rpbench.local_model")


def _source_id(path: Path) -> str:
    stat = path.stat()
    return hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]


def transformers_folder(weights: Path) -> Path:
    """``weights`` itself when it is a transformers folder; for a GGUF file, its cached transformers copy."""
    if weights.is_dir():
        return weights
    out = cache_dir() / "hf" / f"{weights.stem}.{_source_id(weights)}"
    with one_writer(out):
        if not (out / "config.json").is_file():
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            log.info("writing %s as a transformers folder (once; cached at %s)", weights.name, out)
            tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            try:
                tokenizer = AutoTokenizer.from_pretrained(str(weights.parent), gguf_file=weights.name)
                model: Any = AutoModelForCausalLM.from_pretrained(str(weights.parent), gguf_file=weights.name,
                                                             dtype=torch.float32)
                # The values are plain floats now: drop the marks of the GGUF quantization they came from.
                model.hf_quantizer = None
                model.is_quantized = False
                if hasattr(model.config, "quantization_config"):
                    del model.config.quantization_config
                model.save_pretrained(tmp)
                tokenizer.save_pretrained(tmp)
                shutil.rmtree(out, ignore_errors=True)
                tmp.replace(out)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return out
