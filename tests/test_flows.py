"""Flows end to end under prefect_test_harness, with the loopback server as every model."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess

import pytest
from prefect.testing.utilities import prefect_test_harness

from rpbench.storage.characters import write_characters
from rpbench.storage.pool import write_scenes
from rpbench.storage.schemas import CALLS, ITEM_SCORES, ITEMS, JUDGMENTS
from rpbench.storage.tables import read_rows, write_table
from tests.helpers import TEST_KEY_ENV
from tests.test_builder import SCENE, TEST

pytestmark = pytest.mark.flow


@pytest.fixture(scope="module")
def harness():
    with prefect_test_harness(server_startup_timeout=90):
        yield


def _models_file(tmp_path, server, extra: str = "") -> str:
    path = tmp_path / "models.toml"
    path.write_text(
        f'[default]\nmodel = "openai/loopback"\napi_base = "{server.base_url}"\napi_key_env = "{TEST_KEY_ENV}"\n'
        'structured = "json_schema"\ntimeout = 5\n' + extra
    )
    return str(path)


def _worker_processes() -> list[str]:
    """Gateway worker processes started by this test process and still running."""
    found = subprocess.run(["pgrep", "-P", str(os.getpid()), "-f", "rpbench.tasks.llm.process_worker"],
                           capture_output=True, text=True)
    return found.stdout.split()


def _respond(body):
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    digest = hashlib.md5(json.dumps(body["messages"]).encode()).hexdigest()[:6]
    if name == "JudgeVerdict":
        return json.dumps({"reasoning": f"A is better {digest}", "sigma": 2})
    if name == "CheckVerdict":
        return json.dumps({"answer": "No"})
    return f"(nods) reply {digest}"


def _bench(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    write_characters(bench / "characters.yaml", [TEST])
    write_scenes(bench / "scenes.parquet", [SCENE])
    items = [{"item_id": f"i{k}", "character": "Zero", "character_type": "synthesized", "language": "en",
              "scene_id": "s1", "dialogue_id": "d0", "dimension": dim,
              "history": [{"speaker": "Starbuck", "text": f"Question {k}?"}], "test_utterance": "t",
              "base_utterance": "b", "source_model": "m", "sigma": 1, "flags": []}
             for k, dim in enumerate(["CR", "FR", "PA"])]
    write_table(bench / "items.parquet", items, ITEMS)
    return bench


def test_evaluate_flow_writes_tables_report_and_resumes(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.furina.evaluate import evaluate

    monkeypatch.setenv(TEST_KEY_ENV, "sk-flow-test-secret")
    loopback.responder = _respond
    # Calls go through gateway worker processes here, which must be gone when the flow is.
    models = _models_file(tmp_path, loopback, extra="processes = 2\n")
    out, cache = tmp_path / "eval", str(tmp_path / "cache.sqlite")
    bench = _bench(tmp_path)
    manifest = asyncio.run(evaluate(bench=str(bench), models=["openai/model-under-test"], out=str(out),
                                    resamples=200, models_file=models, cache=cache))
    scores = read_rows(out / "item_scores.parquet", ITEM_SCORES)
    assert len(scores) == 3 and all(s["score"] == 0.5 for s in scores)  # sigma 2 twice: (f(2) + f(6 - 2)) / 2
    assert len(read_rows(out / "judgments.parquet", JUDGMENTS)) == 6
    assert (out / "report.html").read_text().count("data:image/png;base64,") == 3
    assert manifest["row_counts"]["model_scores"] > 0 and manifest["totals"]["calls_sent"] == len(loopback.requests)
    assert {"furina/eval/judge.en.j2", "furina/builder/test_turn.en.j2"} <= set(manifest["prompt_templates"])
    sent = len(loopback.requests)
    assert _worker_processes() == []
    # The leaderboard and the report are published as artifacts for the Prefect UI.
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async def artifact_keys() -> set[str]:
        async with get_client() as client:
            found = await client.read_artifacts(artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["leaderboard", "evaluation-report", "run-summary-eval"])))
        return {a.key for a in found}

    assert {"leaderboard", "evaluation-report"} <= asyncio.run(artifact_keys())

    asyncio.run(evaluate(bench=str(bench), models=["openai/model-under-test"], out=str(out), resamples=200,
                         models_file=models, cache=cache))
    assert len(loopback.requests) == sent  # the rerun sent nothing
    calls = read_rows(out / "calls.parquet", CALLS)
    assert sum(c["cached"] for c in calls) == sent
    assert "sk-flow-test-secret" not in (out / "manifest.json").read_text()
