"""Helpers shared by tests and benchmarks: gateways bound to the loopback server."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rpbench.tasks.llm import ModelsConfig, ModelSpec
from rpbench.tasks.llm.config import RetryPolicy
from tests.loopback import LoopbackServer

TEST_KEY_ENV = "RPBENCH_TEST_API_KEY"
# How tests run the command line in a process of its own (kills, a fresh interpreter): the installed entry
# point's module, with this interpreter. Tests of the command line's own behaviour use ``rpbench`` below.
# The benchmarks' released files, beside the checkout (never in it: no license to redistribute them).
RELEASED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def released(relative: str) -> Path:
    """A released data file, or the test skipped saying which file is missing and where it was looked for."""
    import pytest

    path = RELEASED_DATA / relative
    if not path.is_file():
        pytest.skip(f"released data not here: {path} (see ../shared/data/README.md)")
    return path


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



def loopback_models_file(path, server: LoopbackServer, default: str = "", rest: str = ""):
    """A models file whose [default] is the loopback server standing in for a server of one's own (vLLM
    rules), with the key in TEST_KEY_ENV; ``default``: more lines of [default]; ``rest``: more sections."""
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{server.base_url}"\nschema_rules = "vllm"\n'
                    f'api_key_env = "{TEST_KEY_ENV}"\nstructured = "json_schema"\ntimeout = 5\n{default}'
                    "[retry]\ntransient_attempts = 2\nbackoff_initial = 0.01\nbackoff_max = 0.05\n" + rest)
    return path


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


def any_mode_responder(body: dict) -> str:
    """``schema_responder`` for the requests it knows, the plan's stand-in (a valid instance of the requested
    schema, or a sentence naming an option letter) for any other; the same request always gets the same reply."""
    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    known = schema_responder(body)
    if fmt and not known.startswith("(nods)"):
        return known
    return stand_in_responder(body)


def stand_in_responder(body: dict, ending: bool = False) -> str:
    """What ``--plan`` answers in place of a model, from the request as it arrives (a plan and a run on this
    server then take the same course: its longest, or with ``ending`` its shortest)."""
    from rpbench.tasks.llm.stand_in import request_schema, stand_in_text

    name = str(((body.get("response_format") or {}).get("json_schema") or {}).get("name"))
    if name.startswith("Ranking"):  # the reply RoleLLM's ranking schema offers a plan (stand_in_reply)
        return schema_responder(body).replace('"clear"', '"stand-in"')
    if name == "Termination":  # DMT's "done?": its marker (what the plan's stand-in reads) never reaches a server
        return json.dumps({"reason": "stand-in text", "done": ending})
    return stand_in_text(body["messages"], request_schema(body), ending)


def ending_stand_in_responder(body: dict) -> str:
    """As ``stand_in_responder``, ending every dialogue at its first chance (the low end of a plan): a schema's
    END option, a yes that ends a dialogue (DMT's termination check: rpbench's marker on it never reaches a
    provider, so it is known here by its schema's name), or the free-text reply a request names as its ending (the
    server sees the prompt, not the request's ``ends``: CoSER's next-speaker predictor is known by its
    instructions, the opening words of CoSER's own prompt as the release's files give them)."""
    from rpbench.tasks.modes.coser.release import next_speaker_prompt

    first = str(body["messages"][0].get("content") or "")
    if first.startswith(str(next_speaker_prompt().parts[0])):
        return "Next Speaker: <END CHAT>"
    return stand_in_responder(body, ending=True)


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
