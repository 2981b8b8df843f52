"""Replies that stand in for a model's when nothing may be sent: a plan (``--plan``) runs a command's flows on
them to count the calls it would make, and the test servers answer with them.

A stand-in is usable: for a structured request, a value valid for the schema the request carries; for free text,
a sentence naming an option letter (a multiple-choice reader finds one). It is the same for the same request, and
varies between requests (so items do not all look alike). Where a schema offers to end something (an option
named ``END``), the stand-in declines it, so a dialogue runs as long as its stage lets it (the most it can cost);
asked for ``ending`` replies it takes the first end offered (the least).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

ENDINGS = frozenset({"END", "end", "<END>"})


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in schema:
        schema = defs[str(schema["$ref"]).rsplit("/", 1)[-1]]
    return schema


def _choice(options: Sequence[Any], salt: int, ending: bool) -> Any:
    endings = [o for o in options if o in ENDINGS]
    if ending and endings:
        return endings[0]
    going_on = [o for o in options if o not in ENDINGS] or list(options)
    return going_on[salt % len(going_on)]


def offers_ending(schema: Any) -> bool:
    """Whether a schema anywhere offers an option that ends something (a dialogue's ``END``)."""
    if isinstance(schema, Mapping):
        enum = [o for o in schema.get("enum", ()) if isinstance(o, str)]
        if schema.get("rpbench_ends") is True or any(o in ENDINGS for o in enum):
            return True
        return any(offers_ending(v) for v in schema.values())
    if isinstance(schema, list):
        return any(offers_ending(v) for v in schema)
    return False


def schema_instance(schema: Mapping[str, Any], salt: int = 0, defs: Mapping[str, Any] | None = None,
                    ending: bool = False) -> Any:
    """A value valid for a JSON schema (the subset pydantic and rpbench's provider forms emit), varied by
    ``salt``; an option that ends something taken where offered if ``ending``, else declined."""
    defs = schema.get("$defs", {}) if defs is None else defs
    schema = _resolve(schema, defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return _choice(schema["enum"], salt, ending)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if _resolve(o, defs).get("type") != "null"] or schema[key]
            return schema_instance(options[0], salt, defs, ending)
    kind = schema.get("type", "object")
    if isinstance(kind, list):  # ["string", "null"]: the first that is not null
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "null":
        return None
    if kind == "string":
        low, high = int(schema.get("minLength", 1)), int(schema.get("maxLength", 60))
        text = f"stand-in text {salt}"
        return (text * (1 + low // len(text)))[: max(low, min(high, len(text)))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + (1 if "exclusiveMinimum" in schema else 0))
        high = schema.get("maximum", low + 4)
        return low + salt % (int(high - low) + 1)
    if kind == "boolean":
        return ending if schema.get("rpbench_ends") else bool(salt % 2)
    if kind == "array":
        if "prefixItems" in schema:
            return [schema_instance(s, salt + k, defs, ending) for k, s in enumerate(schema["prefixItems"])]
        n = min(max(int(schema.get("minItems", 0)), 1), int(schema.get("maxItems", 1)))
        return [schema_instance(schema.get("items", {"type": "string"}), salt + k, defs, ending) for k in range(n)]
    # Flags named is_* (a refusal, say) stay off, so the items are scored rather than set aside.
    return {name: False if name.startswith("is_") and _resolve(sub, defs).get("type") == "boolean"
            else schema_instance(sub, salt + k, defs, ending)
            for k, (name, sub) in enumerate((schema.get("properties") or {}).items())}


def _digest(messages: Sequence[Mapping[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(list(messages), ensure_ascii=False).encode()).hexdigest()


def stand_in_text(messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any] | None = None,
                  ending: bool = False) -> str:
    """The stand-in reply to ``messages``: JSON valid for ``schema`` when one is given (ending what it offers to
    end if ``ending``), else a sentence."""
    if schema is None:
        return f"(nods) A fair question; my answer is {_digest(messages)[:8]}. I choose B."
    return json.dumps(schema_instance(schema, int(_digest(messages)[:6], 16), ending=ending), ensure_ascii=False)


def request_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The JSON schema an OpenAI-style request body asks its reply to follow, if any."""
    fmt = body.get("response_format") or {}
    inner = fmt.get("json_schema") if isinstance(fmt, Mapping) else None
    return (inner or {}).get("schema") if isinstance(inner, Mapping) else None
