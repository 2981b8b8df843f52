"""Local models as a litellm custom provider: ``local/<name>``.

litellm routes any model string with the ``local/`` prefix here (passing the
name after the prefix), so a local model is called exactly like a remote one
and every call still goes through litellm. The name picks the model from the
local registry; an unknown name fails the call, it never falls back to the
embedded model. A JSON schema given as ``response_format`` is enforced by
constrained decoding. Which engine runs the model (llama.cpp for a GGUF file,
transformers for a model folder) is ``engines``' choice.
"""

from __future__ import annotations

import asyncio
from typing import Any

import litellm
from litellm import CustomLLM, ModelResponse

from rpbench.tasks.llm.local.engines import Engines
from rpbench.tasks.llm.local.generation import GenRequest, GenResult
from rpbench.tasks.llm.local.models import PROVIDER, LocalModelSpec, register_local_models


def _schema_of(optional_params: dict[str, Any]) -> dict[str, Any] | None:
    fmt = optional_params.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return fmt["json_schema"].get("schema")
    if isinstance(fmt, dict) and fmt.get("type") == "json_object":
        return {"type": "object"}
    return None


def _request(messages: list[dict[str, Any]], optional_params: dict[str, Any]) -> GenRequest:
    return GenRequest(
        messages=messages,
        max_tokens=int(optional_params.get("max_tokens") or 256),
        temperature=float(optional_params.get("temperature") or 0.0),
        top_p=optional_params.get("top_p"),
        seed=optional_params.get("seed"),
        schema=_schema_of(optional_params),
        # Set in the models config (default_models.toml uses 1.2: the 135M model loops without it).
        repetition_penalty=float(optional_params.get("repetition_penalty") or 1.0),
    )


def _response(model: str, result: GenResult) -> ModelResponse:
    return ModelResponse(
        model=model,
        choices=[
            {
                "index": 0,
                "finish_reason": result.finish_reason,
                "message": {"role": "assistant", "content": result.text},
            }
        ],
        usage={
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "total_tokens": result.prompt_tokens + result.completion_tokens,
        },
    )


class LocalProvider(CustomLLM):
    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        params = kwargs.get("optional_params") or {}
        result = Engines.for_model(model).submit(_request(messages, params)).result()
        return _response(model, result)

    async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        params = kwargs.get("optional_params") or {}
        future = Engines.for_model(model).submit(_request(messages, params))
        result = await asyncio.wrap_future(future)
        return _response(model, result)


_registered = False


def register_local_provider(models: dict[str, LocalModelSpec] | None = None) -> None:
    """Route ``local/<name>`` model strings here and register named local models (idempotent, loads nothing)."""
    global _registered
    register_local_models(models or {})
    if _registered:
        return
    litellm.custom_provider_map = [
        *[p for p in litellm.custom_provider_map if p.get("provider") != PROVIDER],
        {"provider": PROVIDER, "custom_handler": LocalProvider()},
    ]
    # litellm reads the map into its provider list lazily; this call makes the registration take effect now.
    litellm.utils.custom_llm_setup()
    _registered = True
