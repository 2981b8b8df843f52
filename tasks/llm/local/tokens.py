"""Offline token counting with the embedded model's tokenizer.

Reading the tokenizer out of the GGUF file is slow, so it is saved once as
``tokenizer.json`` (quick to load afterwards) under RPBENCH_CACHE_DIR
(default ``~/.cache/rpbench``). tiktoken is not used: it downloads its files.
"""

from __future__ import annotations

import functools
import threading

from tokenizers import Tokenizer

from rpbench.tasks.core.paths import cache_dir

_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def tokenizer() -> Tokenizer:
    path = cache_dir() / "smollm2-tokenizer.json"
    with _lock:
        if not path.is_file():
            from transformers import AutoTokenizer

            from rpbench.tasks.llm.local.models import find_embedded_gguf

            gguf = find_embedded_gguf()
            hf = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            hf.backend_tokenizer.save(str(tmp))
            tmp.replace(path)
        return Tokenizer.from_file(str(path))


def count_tokens(texts: list[str]) -> list[int]:
    if not texts:
        return []
    return [len(e.ids) for e in tokenizer().encode_batch(texts, add_special_tokens=False)]
