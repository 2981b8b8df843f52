"""Flows end to end under prefect_test_harness, with the loopback server as every model."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from rpbench.flows.kit.running.stage import slug
from rpbench.flows.modes.furina.settings import BuildSettings, EvalSettings, PoolSettings
from rpbench.samples import sample_path
from rpbench.storage.schemas import CALLS
from rpbench.storage.tables import read_records, read_rows, write_records
from rpbench.tasks.modes.furina.character_files import write_characters
from rpbench.tasks.modes.furina.domain import Item
from rpbench.tasks.modes.furina.scene_files import write_scenes
from rpbench.tasks.modes.furina.tables import ITEM_SCORES, ITEMS, JUDGMENTS, SCENES
from tests.helpers import TEST_KEY_ENV, schema_responder
from tests.test_builder import SCENE, TEST

pytestmark = pytest.mark.flow


@pytest.fixture
def stage_lines():
    """The stages' log lines (what Prefect shows and the terminal prints), with when each was written."""
    lines: list[tuple[float, str]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append((record.created, record.getMessage()))

    handler = Keep(level=logging.INFO)
    watched = [logging.getLogger(name) for name in ("prefect.task_runs", "rpbench")]
    for logger in watched:
        logger.addHandler(handler)
    yield lines
    for logger in watched:
        logger.removeHandler(handler)


def assert_progress_before_first_reply(run_dir: Path, lines: list[tuple[float, str]]) -> set[str]:
    """Each stage that called a model logged its progress (a done/total line) before its first reply came.

    Returns the stages checked. A stage's calls are in ``calls/<stage>.parquet``; a reply came at its
    start time plus its latency.
    """
    checked = set()
    for calls_file in sorted((run_dir / "calls").glob("*.parquet")):
        calls = [c for c in read_records(calls_file, CALLS) if not c.cached and c.started_at is not None]
        if not calls:
            continue
        first_reply = min(c.started_at.timestamp() + (c.latency_s or 0.0) for c in calls)
        progress = [t for t, msg in lines
                    if (label := msg.partition(": ")[0]) and slug(label) == calls_file.stem
                    and re.search(r": .* \d+/\d+ \(\d+%\)", msg)]
        assert progress, f"{calls_file.stem}: no progress line at all"
        assert min(progress) <= first_reply, f"{calls_file.stem}: first progress after the first reply"
        checked.add(calls_file.stem)
    return checked


def _models_file(tmp_path: Path, server, extra: str = "", name: str = "models.toml") -> str:
    path = tmp_path / name
    path.write_text(
        f'[default]\nmodel = "openai/loopback"\napi_base = "{server.base_url}"\nschema_rules = "vllm"\napi_key_env = "{TEST_KEY_ENV}"\n'
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
    if name == "JudgeVerdict":  # a judge's words depend on how it samples, as a real one's would
        return json.dumps({"reasoning": f"A is better {digest} t={body.get('temperature')}", "sigma": 2})
    if name == "CheckVerdict":
        return json.dumps({"answer": "No"})
    return f"(nods) reply {digest}"


def _bench(tmp_path: Path) -> Path:
    bench = tmp_path / "bench"
    bench.mkdir()
    write_characters(bench / "characters.yaml", [TEST])
    write_scenes(bench / "scenes.parquet", [SCENE])
    items = [Item(item_id=f"i{k}", character="Zero", character_type="synthesized", language="en", scene_id="s1",
                  dialogue_id="d0", dimension=dim, history=[{"speaker": "Starbuck", "text": f"Question {k}?"}],
                  test_utterance="t", base_utterance="b", source_model="m", sigma=1)
             for k, dim in enumerate(["CR", "FR", "PA"])]
    write_records(bench / "items.parquet", items, ITEMS)
    return bench


def _task_states(state) -> Counter[str]:
    """How Prefect itself recorded the task runs of a flow run (the UI shows the same)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read() -> list:
        async with get_client() as client:
            return await client.read_task_runs(flow_run_filter=FlowRunFilter(
                id=FlowRunFilterId(any_=[state.state_details.flow_run_id])))

    return Counter((run.name.split("-", 2)[0] + "-" + run.name.split("-", 2)[1], run.state.name)
                   for run in asyncio.run(read()))


def test_evaluate_flow_stages_tables_report_and_a_cached_rerun(harness, loopback, tmp_path, monkeypatch,
                                                               stage_lines):
    from rpbench.flows.modes.furina.evaluate import evaluate

    monkeypatch.setenv(TEST_KEY_ENV, "sk-flow-test-secret")
    loopback.responder = _respond
    # Calls go through gateway worker processes here, which must be gone when the flow is.
    models = _models_file(tmp_path, loopback, extra="processes = 2\n")
    out = tmp_path / "eval"
    settings = EvalSettings(bench=str(_bench(tmp_path)), models=["openai/model-under-test"], out=str(out),
                            resamples=200, models_file=models, cache=str(tmp_path / "cache.sqlite"))
    state = evaluate(settings, return_state=True)
    manifest = state.result()
    scores = read_records(out / "item_scores.parquet", ITEM_SCORES)
    assert len(scores) == 3 and all(s.score == 0.5 for s in scores)  # sigma 2 twice: (f(2) + f(6 - 2)) / 2
    assert len(read_rows(out / "judgments.parquet", JUDGMENTS)) == 6
    # Three of FURINA's own charts, and the arena's Elo over both orders' battles.
    assert (out / "report.html").read_text().count("data:image/png;base64,") == 4
    from rpbench.tasks.reports.arena import BATTLES

    battles = read_records(out / "battles.parquet", BATTLES)
    assert len(battles) == 6 and {b.outcome for b in battles} == {"model_a"} and {b.position for b in battles} == {"a", "b"}
    assert manifest["totals"]["calls_sent"] == len(loopback.requests) == manifest["this_run"]["calls_sent"]
    # The flow's own time, from its first stage to its manifest: at least the span of its stages' log lines
    # (not, say, the last stage's alone).
    stage_span = stage_lines[-1][0] - stage_lines[0][0]
    assert stage_span > 0 and manifest["timings"]["wall_s"] >= round(stage_span, 3) - 0.002
    assert {"furina/eval/judge.en.j2", "furina/builder/test_turn.en.j2"} <= set(manifest["prompt_templates"])
    # Each stage is its own task run, per model where it maps over models, with its table on disk.
    first = _task_states(state)
    assert first == {("eval-answers", "Completed"): 2, ("eval-judgments", "Completed"): 1,
                     ("eval-checks", "Completed"): 1, ("eval-scores", "Completed"): 1,
                     ("eval-report", "Completed"): 1}
    assert (out / "stages" / "openai-model-under-test" / "eval-judgments" / "judgments.parquet").is_file()
    assert _worker_processes() == []
    assert assert_progress_before_first_reply(out, stage_lines) == {
        "eval-answers-base", "eval-answers-openai-model-under-test", "eval-judgments-openai-model-under-test",
        "eval-checks-openai-model-under-test"}
    sent = len(loopback.requests)

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter

    async def run_artifacts() -> list:
        from prefect.client.schemas.filters import ArtifactFilterFlowRunId

        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id])))

    made = [a for a in asyncio.run(run_artifacts()) if a.type != "progress"]
    kinds: dict[str, set[str]] = {}
    for a in made:
        kinds.setdefault(a.key, set()).add(a.type)
    assert {"furina-leaderboard", "furina-report", "stage-eval-judgments-openai-model-under-test",
            "stage-eval-report", "run-summary-evaluate"} <= set(kinds)
    assert all(len(types) == 1 for types in kinds.values()), kinds  # a key names one kind of artifact
    assert kinds["furina-report"] == {"markdown"} and kinds["stage-eval-report"] == {"table"}
    summary = next(a for a in made if a.key == "run-summary-evaluate").data
    assert f"Run folder: `{out.resolve()}`" in summary and (out / "report.html").resolve().as_uri() in summary
    tables = [a for a in made if a.type == "table"]
    assert not any("_final" in (a.description or "") for a in tables)  # published paths, not staging ones
    numbers = [v for a in tables for row in json.loads(a.data) if isinstance(row, dict) for v in row.values()
               if isinstance(v, float)]
    assert numbers and all(len(repr(v).replace("-", "").replace(".", "").lstrip("0")) <= 4 or v != v
                           for v in numbers), numbers  # four significant digits at most

    async def progress_artifacts() -> list:
        from prefect.client.schemas.filters import ArtifactFilterFlowRunId, ArtifactFilterType

        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(
                type=ArtifactFilterType(any_=["progress"]),
                flow_run_id=ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id])))

    found = asyncio.run(progress_artifacts())
    assert len(found) == 6 and all(a.data == 100.0 for a in found)  # one per stage, each finished
    assert all(re.search(r": finished in \d+ s$", a.description) for a in found), [a.description for a in found]

    # The same flow again: every stage Cached in Prefect, no LLM call sent, the same tables.
    again = evaluate(settings, return_state=True)
    assert set(_task_states(again)) == {(name, "Cached") for name, _ in first}
    assert len(loopback.requests) == sent
    assert {k: v for k, v in again.result()["this_run"].items() if k != "seconds"} == {
        "stages": 6, "cached": 6, "run": [], "calls_sent": 0, "cost_usd": 0, "cost_unknown_calls": 0,
        "prompt_tokens": 0, "reply_tokens": 0, "runner": "threads"}
    assert read_records(out / "item_scores.parquet", ITEM_SCORES) == scores
    assert "sk-flow-test-secret" not in (out / "manifest.json").read_text()

    # Another judge: answers stay cached; judgments and everything after them run again.
    other = _models_file(tmp_path, loopback, extra='processes = 2\n[roles.judge]\ntemperature = 0.5\n', name="m2.toml")
    rejudged = evaluate(settings.model_copy(update={"models_file": other}), return_state=True)
    assert rejudged.result()["this_run"]["run"] == ["eval-judgments[openai-model-under-test]",
                                                    "eval-checks[openai-model-under-test]",
                                                    "eval-scores[openai-model-under-test]", "eval-report"]
    asked = {(r.get("response_format") or {}).get("json_schema", {}).get("name") for r in loopback.requests[sent:]}
    assert asked == {"JudgeVerdict", "CheckVerdict"}  # no answer was asked for again

    # A stage whose tables were deleted runs again instead of trusting its cached result.
    (out / "report.md").unlink()
    evaluate(settings, return_state=True)
    assert (out / "report.md").is_file()


def test_replies_given_as_a_file_are_judged_exactly_as_live_ones(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.furina.evaluate import evaluate
    from rpbench.tasks.modes.furina.tables import GENERATIONS

    monkeypatch.setenv(TEST_KEY_ENV, "sk-flow-test")
    loopback.responder = _respond
    models, cache, bench = _models_file(tmp_path, loopback), str(tmp_path / "cache.sqlite"), str(_bench(tmp_path))
    live = evaluate(EvalSettings(bench=bench, models=["openai/mut"], out=str(tmp_path / "live"), resamples=50,
                                 models_file=models, cache=cache))
    replies = [g for g in read_records(tmp_path / "live" / "generations.parquet", GENERATIONS)
               if g.model == "openai/mut"]
    path = tmp_path / "mut.jsonl"
    path.write_text("\n".join(json.dumps({"id": g.item_id, "answer": g.text}) for g in replies))
    answered = {json.dumps(r["messages"]) for r in loopback.requests if r["model"] == "mut"}
    given = evaluate(EvalSettings(bench=bench, answers=[f"openai/mut={path}"], out=str(tmp_path / "given"), resamples=50,
                                  models_file=models, cache=cache))
    assert {json.dumps(r["messages"]) for r in loopback.requests if r["model"] == "mut"} == answered  # not asked
    for name, spec in (("generations", GENERATIONS), ("judgments", JUDGMENTS), ("item_scores", ITEM_SCORES)):
        assert read_records(tmp_path / "given" / f"{name}.parquet", spec) == \
            read_records(tmp_path / "live" / f"{name}.parquet", spec), name
    assert given["evaluation"]["leaderboard"] == live["evaluation"]["leaderboard"]


def test_pool_and_build_flows_run_stage_by_stage(harness, loopback, tmp_path, monkeypatch, stage_lines):
    from rpbench.flows.modes.furina.build import build_benchmark
    from rpbench.flows.modes.furina.pool import build_pool

    monkeypatch.setenv(TEST_KEY_ENV, "sk-flow-test")
    loopback.responder = schema_responder
    models, cache = _models_file(tmp_path, loopback), str(tmp_path / "cache.sqlite")
    book = tmp_path / "ledger.txt"
    book.write_text(sample_path("books", "the_keepers_ledger.en.txt").read_text())
    state = build_pool(PoolSettings(books=[str(book)], out=str(tmp_path / "pool"), target_tokens=1024,
                                    min_tokens=512, max_tokens=2048, models_file=models, cache=cache),
                       return_state=True)
    assert _task_states(state) == {(f"pool-{s}", "Completed"): 1
                                   for s in ("chunk", "boundaries", "extract", "stitch", "assemble", "merge")}
    for table in ("books", "chunks", "scenes", "dropped_scenes", "pool_stats"):
        assert (tmp_path / "pool" / f"{table}.parquet").is_file(), table
    assert (tmp_path / "pool" / "stages" / "ledger" / "pool-extract" / "extractions.parquet").is_file()
    assert {"pool-boundaries-ledger", "pool-extract-ledger"} <= assert_progress_before_first_reply(
        tmp_path / "pool", stage_lines)

    # The loopback extractor finds no dialogue in a book: give the builder a pool of its own.
    pool = tmp_path / "pool2"
    write_scenes(pool / SCENES.filename, [SCENE])
    chars = tmp_path / "chars.yaml"
    write_characters(chars, [TEST])
    settings = BuildSettings(characters=str(chars), pool=str(pool), out=str(tmp_path / "bench"), tau=1,
                             min_rounds=2, max_rounds=3, budget=2, wave_size=2, models_file=models, cache=cache)
    state = build_benchmark(settings, return_state=True)
    manifest = state.result()
    states = _task_states(state)
    assert states[("build-simulate", "Completed")] >= 1 and states[("build-items", "Completed")] == 1
    assert states[("build-grade", "Completed")] == states[("build-simulate", "Completed")]
    items = read_records(tmp_path / "bench" / "items.parquet", ITEMS)
    assert len(items) == manifest["build"]["items"] and manifest["build"]["dialogues"] >= 1
    assert {"build-simulate-zero", "build-grade-zero"} <= assert_progress_before_first_reply(
        tmp_path / "bench", stage_lines)
    sent = len(loopback.requests)
    rerun = build_benchmark(settings, return_state=True)
    assert {s for _, s in _task_states(rerun)} == {"Cached"} and len(loopback.requests) == sent
    assert read_records(tmp_path / "bench" / "calls.parquet", CALLS)  # the accounting survives the rerun


def test_limit_evaluates_the_benchmarks_first_items_only(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.furina.evaluate import evaluate
    from rpbench.tasks.modes.furina.evaluation.bench import bench_files, load_bench
    from rpbench.tasks.modes.furina.tables import GENERATIONS

    monkeypatch.setenv(TEST_KEY_ENV, "sk-flow-test")
    loopback.responder = _respond
    bench = str(_bench(tmp_path))
    items = [it.item_id for it in load_bench(**bench_files(bench)).items]
    assert len(items) > 1
    done = evaluate(EvalSettings(bench=bench, models=["openai/mut"], out=str(tmp_path / "o"), resamples=50, limit=1,
                                 models_file=_models_file(tmp_path, loopback), cache=str(tmp_path / "c.sqlite")))
    made = read_records(tmp_path / "o" / "generations.parquet", GENERATIONS)
    assert {g.item_id for g in made} == {items[0]} and {g.model for g in made} == {"base", "openai/mut"}
    assert done["evaluation"]["items"] == 1
    assert {r.item_id for r in read_records(tmp_path / "o" / "item_scores.parquet", ITEM_SCORES)} == {items[0]}


def test_a_stage_declaration_with_a_misspelt_input_or_template_fails_as_it_is_declared():
    """A misspelt ``inputs=`` name would leave that file out of the stage's cache key (an edited input would not
    rerun it), a misspelt template would leave edits to the prompt unnoticed: both fail at import, by name."""
    from rpbench.flows.kit.running.stage import StageResult, StageRun, stage

    async def answers(run: StageRun, items: str, model: str) -> StageResult:
        return run.result()

    with pytest.raises(TypeError, match=r"inputs=\['itmes'\] name no parameter of it .*'items'"):
        stage("typo-inputs", inputs=["itmes"])(answers)
    with pytest.raises(TypeError, match=r"templates=\['furina/eval/jugde'\] match no prompt template"):
        stage("typo-templates", templates=["furina/eval/jugde"])(answers)
    with pytest.raises(TypeError, match="roles must be a list"):
        stage("typo-roles", roles="coser-actor")(answers)
    declared = stage("fine", inputs=["items"], templates=["furina/eval/"], roles=["coser-actor"])(answers)
    assert declared.name == "fine"


def test_a_folder_given_as_a_stage_s_input_counts_its_files(tmp_path):
    """A mode that reads a folder (RoleLLM's released layout, CharacterBench's) declares it as an input: an edit
    to a file in it must change the stage's key, or the stage would be served from its cache."""
    from rpbench.flows.kit.running.stage import file_digest

    folder = tmp_path / "data"
    (folder / "zh").mkdir(parents=True)
    (folder / "a.json").write_text("[1]")
    (folder / "zh" / "b.json").write_text("[2]")
    before = file_digest(folder)
    (folder / ".cache").write_text("editor state")  # hidden: not the data
    assert file_digest(folder) == before != file_digest(tmp_path / "nothing-here")
    (folder / "zh" / "b.json").write_text("[3]")
    assert file_digest(folder) != before
