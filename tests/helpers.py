"""Helpers shared by tests and benchmarks: gateways bound to the loopback server."""

from __future__ import annotations

from tasks.llm import ModelsConfig, ModelSpec
from tasks.llm.config import RetryPolicy
from tasks.llm.loopback_server import LoopbackServer

TEST_KEY_ENV = "RPBENCH_TEST_API_KEY"



def loopback_config(server: LoopbackServer, **overrides) -> ModelsConfig:
    fields = {
        "model": "openai/loopback-model",
        "api_base": server.base_url,
        "api_key_env": TEST_KEY_ENV,
        "timeout": 2.0,
        "max_concurrency": 16,
        "structured": "json_schema",
    }
    spec = ModelSpec(**{**fields, **overrides})
    retry = RetryPolicy(transient_attempts=4, backoff_initial=0.01, backoff_max=0.05, parse_attempts=3)
    return ModelsConfig(default=spec, retry=retry)
