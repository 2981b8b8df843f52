"""Every schema every mode can send, in the form each provider family takes, checked against that family's
documented subset (written out here, apart from the code that makes the schemas), valid JSON Schema, and
compiled by xgrammar (what vLLM's guided decoding uses)."""

from __future__ import annotations

import importlib
import json
import pkgutil
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel

import rpbench.tasks.modes
from rpbench.tasks.core.records import Record
from rpbench.tasks.llm.provider_schema import FAMILIES, family_of, response_format, schema_for
from rpbench.tasks.llm.structured import with_reasoning_cap


def _static_models() -> list[type[BaseModel]]:
    """Every pydantic model the modes define that is not a table record: their request schemas (and a few
    settings models, which are checked too)."""
    found: dict[str, type[BaseModel]] = {}
    for info in pkgutil.walk_packages(rpbench.tasks.modes.__path__, "rpbench.tasks.modes."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, BaseModel) and not issubclass(obj, Record)
                    and obj.__module__ == info.name and obj.model_fields):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return list(found.values())


def _made_models() -> list[type[BaseModel]]:
    """The schemas made per request (a judge's verdicts per turn, a director's roster, ...)."""
    from rpbench.tasks.modes.furina.builder.turns import _given_dimension, director_schema
    from rpbench.tasks.modes.furina.characters.synthesis import dialogue_schema, scene_schema
    from rpbench.tasks.modes.furina.pool.models import fragment_schema
    from rpbench.tasks.modes.pingpong.judging import verdicts_schema
    from rpbench.tasks.modes.rolellm.context_instruct import batch_schema
    from rpbench.tasks.modes.rolellm.judging import ranks_schema

    return [verdicts_schema(1), verdicts_schema(3), batch_schema(3), ranks_schema(4), director_schema(["Ann", "Bo"]),
            scene_schema(["Ann", "Bo"]), dialogue_schema(["Ann", "Bo"]), fragment_schema(["Ann", "Bo"]),
            _given_dimension("CA")]


MODELS = _static_models() + _made_models()
SENT = MODELS + [with_reasoning_cap(m, 200) for m in MODELS]  # a role's reasoning_chars makes these

# -- each family's documented subset, as rules -------------------------------------------------------------
STANDARD = {"type", "properties", "required", "items", "prefixItems", "enum", "const", "anyOf", "allOf", "oneOf",
            "description", "title", "default", "minLength", "maxLength", "minItems", "maxItems", "minimum",
            "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern", "format", "additionalProperties",
            "uniqueItems", "examples"}
OPENAI_STRICT = {"type", "properties", "required", "items", "enum", "anyOf", "description",
                 "additionalProperties"}
GEMINI = {"type", "format", "description", "nullable", "enum", "items", "minItems", "maxItems", "properties",
          "required", "anyOf", "propertyOrdering"}


def _nodes(schema: Any, path: str = "$"):
    """Every schema node (not property-name maps) with where it is."""
    if isinstance(schema, dict):
        yield path, schema
        for key, value in schema.items():
            if key == "properties":
                for name, sub in value.items():
                    yield from _nodes(sub, f"{path}.{name}")
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                yield from _nodes(value, f"{path}[]")
            elif key in ("anyOf", "allOf", "oneOf", "prefixItems"):
                for k, sub in enumerate(value):
                    yield from _nodes(sub, f"{path}.{key}[{k}]")


def violations(schema: dict[str, Any], family: str) -> list[str]:
    out = []
    allowed = {"openai": OPENAI_STRICT, "gemini": GEMINI}.get(family, STANDARD)
    for path, node in _nodes(schema):
        extra = set(node) - allowed
        if extra:
            out.append(f"{path}: {sorted(extra)} not in {family}'s subset")
        if "$ref" in node or "$defs" in node:
            out.append(f"{path}: a reference")
        if family == "openai" and (node.get("type") == "object" or "properties" in node):
            if node.get("additionalProperties") is not False:
                out.append(f"{path}: an object open to other properties")
            if sorted(node.get("required", [])) != sorted(node.get("properties", {})):
                out.append(f"{path}: not every property required")
        if family == "gemini":
            if node.get("type") == "null" or (isinstance(node.get("type"), list)):
                out.append(f"{path}: a null or multiple type")
            if "enum" in node and not all(isinstance(v, str) for v in node["enum"]):
                out.append(f"{path}: an enum of non-strings")
    return out


def test_the_schemas_cover_every_mode():
    modes = {m.__module__.split(".")[3] for m in MODELS}
    assert {"furina", "pingpong", "dmt", "rolellm"} <= modes  # RoleInteract's replies are free text
    assert len(MODELS) >= 25


@pytest.mark.parametrize("family", FAMILIES)
def test_every_schema_fits_each_familys_rules(family):
    for model in SENT:
        schema = schema_for(model, family)
        assert not violations(schema, family), (model.__name__, violations(schema, family))
        Draft202012Validator.check_schema(schema)
        assert "free_text" not in json.dumps(schema)  # rpbench's own marker never reaches a provider


def test_every_schema_compiles_with_xgrammar():
    import xgrammar as xgr

    for model in SENT:
        for family in ("vllm", "local", "openai"):
            xgr.Grammar.from_json_schema(json.dumps(schema_for(model, family)))


def test_a_valid_reply_still_validates_against_the_full_record_type():
    """What a family cannot say (bounds, tuple lengths) is checked after parsing."""
    from rpbench.tasks.llm.structured import parse_reply
    from rpbench.tasks.modes.pingpong.judging import verdicts_schema

    model = verdicts_schema(2)
    schema = schema_for(model, "openai")
    assert "prefixItems" not in json.dumps(schema)
    turn = {"is_refusal_explanation": "", "is_refusal": False, "in_character_explanation": "x",
            "in_character_score": 4, "entertaining_explanation": "x", "entertaining_score": 4,
            "fluency_explanation": "x", "fluency_score": 4}
    with pytest.raises(ValueError, match="does not match the schema"):
        parse_reply(json.dumps({"scores": [{**turn, "turn": 1}]}), model)  # one turn where two were asked
    assert parse_reply(json.dumps({"scores": [{**turn, "turn": 1}, {**turn, "turn": 2}]}), model)


def test_the_family_follows_the_model_strings_route():
    # The OpenAI route is strict whatever its api_base (a proxy, an Azure deployment); servers of one's own not.
    assert family_of("gpt-4o") == family_of("openai/gpt-4o") == family_of("azure/my-deployment") == "openai"
    assert family_of("hosted_vllm/qwen") == family_of("ollama_chat/qwen") == "vllm"
    assert family_of("gemini/gemini-1.5-flash") == family_of("vertex_ai/gemini-pro") == "gemini"
    assert family_of("anthropic/claude-3-5-haiku-20241022") == "anthropic"
    assert family_of("local/smollm2-135m") == "local"
    sent = response_format(MODELS[0], "openai")
    assert sent["json_schema"]["strict"] is True and response_format(MODELS[0], "vllm")["json_schema"]["strict"] is False


@pytest.mark.parametrize("model,extra", [("openai/gpt-4.1-mini", {}),
                                         ("azure/gpt-4.1-mini", {"api_version": "2024-10-21"})],
                         ids=["openai-behind-a-proxy", "azure"])
async def test_every_schema_sent_on_the_openai_route_with_an_api_base_is_strict(loopback, monkeypatch, model, extra):
    """What the server receives, through litellm's own route for the model: an OpenAI model behind a proxy's
    api_base, and an Azure deployment (which always has one), get OpenAI's strict form."""
    from rpbench.tasks.llm import ModelsConfig, ModelSpec
    from rpbench.tasks.llm.config import RetryPolicy
    from rpbench.tasks.llm.gateway import Gateway
    from tests.helpers import TEST_KEY_ENV

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    base = loopback.base_url if model.startswith("openai/") else loopback.base_url.removesuffix("/v1")
    # structured = "json_schema": a reply a release's prompt asks for in its own words is sent a schema too then.
    spec = ModelSpec(model=model, api_base=base, api_key_env=TEST_KEY_ENV, timeout=5, extra=extra,
                     structured="json_schema")
    gateway = Gateway(ModelsConfig(default=spec, retry=RetryPolicy(parse_attempts=1, transient_attempts=1)))
    for schema in SENT:
        await gateway.complete("judge", [{"role": "user", "content": "Rate this."}], schema=schema)
    await gateway.aclose()
    sent = [body["response_format"] for body in loopback.requests]
    assert len(sent) == len(SENT)
    for fmt in sent:
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        assert not violations(fmt["json_schema"]["schema"], "openai"), violations(fmt["json_schema"]["schema"],
                                                                                   "openai")


def test_a_models_file_names_the_rules_of_an_endpoint_the_route_does_not_say():
    from rpbench.tasks.llm import ModelsConfig, ModelSpec
    from rpbench.tasks.llm.gateway import Gateway

    spec = ModelSpec(model="hosted_vllm/qwen", api_base="http://127.0.0.1:1/v1", structured="json_schema")
    standard = Gateway(ModelsConfig(default=spec))._response_format(spec, MODELS[0])
    strict = spec.model_copy(update={"schema_rules": "openai"})
    assert standard is not None and standard["json_schema"]["strict"] is False
    made = Gateway(ModelsConfig(default=strict))._response_format(strict, MODELS[0])
    assert made is not None and made["json_schema"]["strict"] is True
    assert strict.identity() != spec.identity()  # a stage cached with other rules runs again
