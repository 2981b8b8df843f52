"""Flows end to end under prefect_test_harness, with the loopback server as every model."""

from __future__ import annotations

import asyncio
import json

import pytest
from prefect.testing.utilities import prefect_test_harness

from storage.schemas import CALLS, DEMO_REPLIES
from storage.tables import read_rows
from tests.helpers import TEST_KEY_ENV

pytestmark = pytest.mark.flow


@pytest.fixture(scope="module")
def harness():
    with prefect_test_harness(server_startup_timeout=90):
        yield


def _models_file(tmp_path, server) -> str:
    path = tmp_path / "models.toml"
    path.write_text(
        f'[default]\nmodel = "openai/loopback"\napi_base = "{server.base_url}"\napi_key_env = "{TEST_KEY_ENV}"\n'
        'structured = "json_schema"\ntimeout = 5\n'
    )
    return str(path)


def test_demo_flow_writes_tables_and_manifest_and_resumes(harness, loopback, tmp_path, monkeypatch):
    from flows.demo import demo

    monkeypatch.setenv(TEST_KEY_ENV, "sk-flow-test-secret")
    models, out, cache = _models_file(tmp_path, loopback), tmp_path / "run", str(tmp_path / "cache.sqlite")
    manifest = asyncio.run(demo(out=str(out), models=models, cache=cache))
    rows = read_rows(out / "demo_replies.parquet", DEMO_REPLIES)
    assert len(rows) == 4 and all(r["judge_status"] == "ok" and r["in_character"] == 3 for r in rows)
    assert manifest["totals"]["calls_sent"] == 8 and manifest["row_counts"]["demo_replies"] == 4
    # Templates rendered in the process that ran the flow, with their hashes.
    assert {"demo/reply.en.j2", "demo/judge.en.j2"} <= set(manifest["prompt_templates"])
    assert all(len(h) == 64 for h in manifest["prompt_templates"].values())
    sent = len(loopback.requests)

    asyncio.run(demo(out=str(out), models=models, cache=cache))
    assert len(loopback.requests) == sent  # the rerun sent nothing
    calls = read_rows(out / "calls.parquet", CALLS)
    assert sum(c["cached"] for c in calls) == 8
    assert "sk-flow-test-secret" not in json.dumps(json.loads((out / "manifest.json").read_text()))
