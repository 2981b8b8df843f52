"""Helpers shared by tests and benchmarks: gateways bound to the loopback server."""

from __future__ import annotations

import sys

from rpbench.tasks.llm import ModelsConfig, ModelSpec
from rpbench.tasks.llm.config import RetryPolicy
from tests.loopback import LoopbackServer

TEST_KEY_ENV = "RPBENCH_TEST_API_KEY"
# How tests run the command line: the installed entry point's module, with this interpreter.
CLI = [sys.executable, "-m", "rpbench.flows.cli.main"]



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


def schema_responder(body: dict) -> str:
    """A loopback reply valid for rpbench's structured requests, chosen by schema name; free text otherwise."""
    import json

    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    name, schema = fmt.get("name"), fmt.get("schema") or {}
    if name == "DirectorChoice":
        choices = schema["properties"]["next"].get("enum") or [schema["properties"]["next"].get("const")]
        return json.dumps({"reason": "their turn", "next": next(c for c in choices if c != "END")})
    if name == "SelectionVerdict":
        return json.dumps({"reasoning": "A is more in character.", "dimension": "CA", "sigma": 2})
    if name == "DialogueGrade":
        return json.dumps({"reason": "coherent", "grade": "high"})
    if name == "JudgeVerdict":
        return json.dumps({"reasoning": "A engages better.", "sigma": 2})
    if name == "CheckVerdict":
        return json.dumps({"answer": "No"})
    return "(nods) That is a fair question, and I will answer it."
