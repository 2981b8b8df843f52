"""The JSON schema a reply must follow, in the form each provider family accepts.

A record type's pydantic schema is richer than any provider takes: ``$ref``s with sibling keys, tuple items
(``prefixItems``), length and value bounds, defaults, ``const``, and rpbench's own marker of free-text fields.
Each family documents a subset, and a request outside it fails on its first call:

- ``openai`` (Structured Outputs, ``strict: true``): every object closed (``additionalProperties: false``)
  with every property required (optional ones nullable instead), no string, number or array bounds, no
  ``default``, no tuple items;
- ``gemini`` (its ``responseSchema``, an OpenAPI subset): no ``$ref``, no ``additionalProperties``, enums of
  strings only, ``nullable`` instead of a null type;
- ``anthropic`` (litellm sends the schema as a tool's ``input_schema``), ``vllm`` (guided decoding through
  xgrammar; ``hosted_vllm/`` and other servers of one's own) and ``local`` (the embedded engine's grammar): standard
  JSON Schema, references inlined.

Whatever a family cannot say is still enforced: replies are validated against the full record type after
parsing (``structured.parse_reply``), and a reply outside a bound is shown back to the model like any other
unusable reply. Non-standard keys never reach a provider.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel

Family = Literal["openai", "gemini", "anthropic", "vllm", "local"]
FAMILIES: tuple[Family, ...] = ("openai", "gemini", "anthropic", "vllm", "local")

# rpbench's own marker of a free-text field (structured.REASONING): never sent.
OWN_KEYS = frozenset({"free_text", "rpbench_ends"})
# Bounds and annotations OpenAI's strict mode refuses (checked after parsing instead).
_OPENAI_DROPPED = frozenset({"minLength", "maxLength", "pattern", "format", "minimum", "maximum",
                             "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
                             "uniqueItems", "default", "patternProperties", "minProperties", "maxProperties",
                             "contains", "minContains", "maxContains", "examples", "title"})
# What Gemini's responseSchema keeps (its OpenAPI subset); everything else goes.
GEMINI_KEYS = frozenset({"type", "format", "description", "nullable", "enum", "items", "minItems", "maxItems",
                         "properties", "required", "anyOf", "propertyOrdering"})


def family_of(model: str) -> Family:
    """The schema rules a litellm model string's route follows. The OpenAI route (``openai/``, ``azure/``, a bare
    name) gets OpenAI's strict form whatever its ``api_base``: a proxy or gateway in front of OpenAI, and every
    Azure deployment, enforce it, and it is a subset of standard JSON Schema, which vLLM and xgrammar accept
    too. ``hosted_vllm/`` and other servers of one's own get standard JSON Schema; a models file's
    ``schema_rules`` names the rules of any endpoint this does not know."""
    provider, slash, _ = model.partition("/")
    provider = provider if slash else "openai"  # litellm reads a bare name (gpt-4o) as OpenAI's
    if provider == "local":
        return "local"
    if provider in ("gemini", "vertex_ai", "vertex_ai_beta"):
        return "gemini"
    if provider in ("anthropic", "bedrock"):
        return "anthropic"
    if provider in ("openai", "azure", "azure_ai"):
        return "openai"
    return "vllm"


# Providers whose batch API litellm's files and batches calls reach (see ``batches``).
BATCH_PROVIDERS = ("openai", "azure", "vertex_ai", "bedrock", "hosted_vllm", "anthropic", "mistral")
# Those whose batches litellm can list, so a batch is found again by the name it carries (its digest).
LISTED_BATCH_PROVIDERS = ("openai", "azure", "vertex_ai", "hosted_vllm")


def batch_provider(model: str) -> str | None:
    """The litellm provider whose batch API serves ``model``'s route, or None when it has none."""
    provider, slash, _ = model.partition("/")
    provider = provider if slash else "openai"
    return provider if provider in BATCH_PROVIDERS else None


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every ``$ref`` replaced by the definition it names (record types are not recursive)."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = walk(copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]]))
                siblings = {k: walk(v) for k, v in node.items() if k != "$ref"}
                return {**target, **siblings}
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def _without_own_keys(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_own_keys(v) for k, v in node.items() if k not in OWN_KEYS}
    if isinstance(node, list):
        return [_without_own_keys(v) for v in node]
    return node


def _tuple_as_array(node: dict[str, Any]) -> dict[str, Any]:
    """``prefixItems`` as plain ``items`` (one schema, or anyOf the distinct ones); the length is checked after
    parsing."""
    items = node.pop("prefixItems")
    distinct = [s for i, s in enumerate(items) if s not in items[:i]]
    node["items"] = distinct[0] if len(distinct) == 1 else {"anyOf": distinct}
    return node


def _plainer(node: dict[str, Any]) -> dict[str, Any]:
    """What neither strict family takes, said another way: tuple items as plain items, ``const`` as an enum."""
    node = dict(node)
    if "prefixItems" in node:
        node = _tuple_as_array(node)
    if "const" in node:
        node["enum"] = [node.pop("const")]
    return node


def _children(node: dict[str, Any], walk: Any) -> dict[str, Any]:
    """``node`` with ``walk`` applied to every sub-schema (the property map's values, not its names)."""
    return {k: (v if k in ("enum", "required") else
                {p: walk(s) for p, s in v.items()} if k == "properties" else walk(v))
            for k, v in node.items()}


def _openai(node: Any) -> Any:
    if isinstance(node, list):
        return [_openai(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = _children(_plainer({k: v for k, v in node.items() if k not in _OPENAI_DROPPED}), _openai)
    if node.get("type") == "object" or "properties" in node:
        node["properties"] = node.get("properties", {})
        node["required"] = list(node["properties"])
        node["additionalProperties"] = False
    return node


def _gemini(node: Any) -> Any:
    if isinstance(node, list):
        return [_gemini(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = _plainer(node)
    options = node.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        rest = [o for o in options if o != {"type": "null"}]
        node.pop("anyOf")
        node = {**(rest[0] if len(rest) == 1 else {"anyOf": rest}), **node, "nullable": True}
    if "enum" in node and not all(isinstance(v, str) for v in node["enum"]):
        # Gemini takes enums of strings only: say the values in words and check them after parsing.
        allowed = ", ".join(str(v) for v in node.pop("enum"))
        node["description"] = f"{node.get('description', '')} (one of {allowed})".strip()
    return _children({k: v for k, v in node.items() if k in GEMINI_KEYS}, _gemini)


def schema_for(model: type[BaseModel], family: Family) -> dict[str, Any]:
    """``model``'s JSON schema as ``family`` accepts it (see the module docstring)."""
    schema = _without_own_keys(inline_refs(model.model_json_schema()))
    if family == "openai":
        return _openai(schema)
    if family == "gemini":
        return _gemini(schema)
    return schema


def response_format(model: type[BaseModel], family: Family) -> dict[str, Any]:
    """The ``response_format`` to send: strict for OpenAI (its schema meets strict mode's rules), plain
    elsewhere."""
    return {"type": "json_schema",
            "json_schema": {"name": model.__name__, "schema": schema_for(model, family),
                            "strict": family == "openai"}}
