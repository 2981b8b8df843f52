"""The LLM gateway: model roles, the call cache, the embedded local model, accounting.

Importing this package sets the environment litellm and Hugging Face need to
work offline, before either is imported.
"""

from rpbench.tasks.core.offline import apply_offline_env

apply_offline_env()

from rpbench.tasks.llm.cache import CallCache, request_key  # noqa: E402
from rpbench.tasks.llm.config import ModelsConfig, ModelSpec, load_models_config  # noqa: E402
from rpbench.tasks.llm.gateway import CallResult, Gateway, NoReply, Reply, Request  # noqa: E402
from rpbench.tasks.llm.ledger import Ledger  # noqa: E402

__all__ = [
    "CallCache",
    "CallResult",
    "Gateway",
    "Ledger",
    "ModelSpec",
    "ModelsConfig",
    "NoReply",
    "Reply",
    "Request",
    "load_models_config",
    "request_key",
]
