"""Helpers shared by tests and benchmarks: gateways bound to the loopback server."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from rpbench.tasks.llm import ModelsConfig, ModelSpec
from rpbench.tasks.llm.config import RetryPolicy
from tests.loopback import LoopbackServer

TEST_KEY_ENV = "RPBENCH_TEST_API_KEY"
# How tests run the command line in a process of its own (kills, a fresh interpreter): the installed entry
# point's module, with this interpreter. Tests of the command line's own behaviour use ``rpbench`` below.
CLI = [sys.executable, "-m", "rpbench.flows.cli.main"]


class _Captured(io.StringIO):
    """What a command printed. Never closed: a library that bound a log handler to the stream while the
    command ran (absl, under rouge-score, does) may still write to it afterwards."""

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def rpbench(*args: str, env: Mapping[str, str] | None = None) -> Ran:
    """Run one command in this process, through the command line's own ``run_cli`` (what ``rpbench`` runs
    before it exits), with ``env`` set for its duration; returns its status and what it printed."""
    from rpbench.flows.cli.main import run_cli

    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    out, err = _Captured(), _Captured()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run_cli(list(args))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Ran(code, out.getvalue(), err.getvalue())



def loopback_config(server: LoopbackServer, **overrides) -> ModelsConfig:
    fields = {
        "model": "openai/loopback-model",
        "api_base": server.base_url,
        "api_key_env": TEST_KEY_ENV,
        "timeout": 2.0,
        "max_concurrency": 16,
        "structured": "json_schema",
        # The loopback server stands in for a server of one's own (vLLM): standard JSON Schema, whose tuple
        # lengths and bounds its responders read to answer as a guided decoder would.
        "schema_rules": "vllm",
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
    if str(name).startswith("Ranking"):  # RoleLLM's ranking judge: every answer ranked once (a permutation)
        n = schema["properties"]["ranking"]["minItems"]
        return json.dumps({"ranking": [{"answer": k + 1, "reason": "clear", "rank": n - k} for k in range(n)]})
    return "(nods) That is a fair question, and I will answer it."


def _resolve(schema: dict, defs: dict) -> dict:
    while "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def schema_instance(schema: dict, salt: int = 0, defs: dict | None = None) -> object:
    """A value valid for a JSON schema (the subset pydantic emits), varied by ``salt``: any mode's structured
    request gets a usable reply from the loopback server without a responder written for it."""
    defs = schema.get("$defs", {}) if defs is None else defs
    schema = _resolve(schema, defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][salt % len(schema["enum"])]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if _resolve(o, defs).get("type") != "null"] or schema[key]
            return schema_instance(options[0], salt, defs)
    kind = schema.get("type", "object")
    if kind == "string":
        low, high = schema.get("minLength", 1), schema.get("maxLength", 60)
        text = f"loopback text {salt}"
        text = (text * (1 + low // len(text)))[: max(low, min(high, len(text)))]
        return text
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + (1 if "exclusiveMinimum" in schema else 0))
        high = schema.get("maximum", low + 4)
        return low + salt % (int(high - low) + 1)
    if kind == "boolean":
        return bool(salt % 2)
    if kind == "array":
        if "prefixItems" in schema:
            return [schema_instance(s, salt + k, defs) for k, s in enumerate(schema["prefixItems"])]
        n = min(max(schema.get("minItems", 0), 1), schema.get("maxItems", 1))
        return [schema_instance(schema.get("items", {"type": "string"}), salt + k, defs) for k in range(n)]
    # Flags named is_* (a refusal, say) stay off, so a scenario's replies are scored rather than excluded.
    return {name: False if name.startswith("is_") and _resolve(sub, defs).get("type") == "boolean"
            else schema_instance(sub, salt + k, defs)
            for k, (name, sub) in enumerate((schema.get("properties") or {}).items())}


def any_mode_responder(body: dict) -> str:
    """``schema_responder`` for the requests it knows, a valid instance of the requested schema for any other,
    free text otherwise; deterministic in the request (the same request always gets the same reply)."""
    import hashlib
    import json

    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    known = schema_responder(body)
    if not fmt or not known.startswith("(nods)"):
        if not fmt:
            digest = hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest()[:8]
            # With an option letter a multiple-choice reader finds: a reply no mode can read would be healed
            # (asked afresh) by every rerun.
            return f"(nods) A fair question; my answer is {digest}. I choose B."
        return known
    salt = int(hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest()[:6], 16)
    return json.dumps(schema_instance(fmt.get("schema") or {}, salt))


def headless_chromium(window: str = "1400,1000"):
    """Headless Chromium (Debian's chromium and chromium-driver; .ci/setup installs them) under Selenium; the
    test is skipped where either is missing."""
    import shutil

    import pytest

    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (bash .ci/setup dev)")
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not binary or not driver:
        pytest.skip("chromium or chromedriver is not installed (bash .ci/setup dev installs them with apt-get)")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={window}"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(driver), options=options)


def peak_in_flight(log: list[dict]) -> int:
    """The most requests the loopback server had in hand at once (from its request log)."""
    events = sorted([(e["started"], 1) for e in log] + [(e["answered"], -1) for e in log if "answered" in e],
                    key=lambda ev: (ev[0], ev[1]))
    now = peak = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak
