"""The LLM layer: model roles and their config, the call cache, requests and replies, the gateway.

Importing this package is cheap: it sets the environment litellm and Hugging
Face need to work offline (before either is ever imported) and nothing more.
The gateway, which brings litellm, is imported from ``rpbench.tasks.llm.gateway``
where calls are really made; stages type against ``requests.Model``.
"""

from rpbench.tasks.core.offline import apply_offline_env

apply_offline_env()

from rpbench.tasks.llm.config import ModelsConfig, ModelSpec, load_models_config  # noqa: E402
from rpbench.tasks.llm.requests import CallResult, Model, NoReply, Reply, Request  # noqa: E402

__all__ = [
    "CallResult",
    "Model",
    "ModelSpec",
    "ModelsConfig",
    "NoReply",
    "Reply",
    "Request",
    "load_models_config",
]
