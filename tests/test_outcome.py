"""A run tells the truth about itself: one that lost more to failures than ``max_failure_share`` allows (or
whose stage got no usable reply at all) writes everything, then ends Failed in Prefect and exits 3."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rpbench.flows.kit.running.outcome import model_reasons, stage_reasons
from rpbench.samples import sample_path
from rpbench.tasks.core.records import CallRecord, Failure
from tests.helpers import TEST_KEY_ENV, rpbench


def _failed(model: str, n: int) -> list[Failure]:
    return [Failure(stage="answers", model=model, item_id=f"i{k}", kind="answer") for k in range(n)]


def test_the_threshold_is_a_share_of_each_models_items_and_its_edge_passes():
    scored = {"m": 9, "n": 8}
    assert model_reasons(_failed("m", 1), scored, 0.1) == []  # 1 of 10: exactly the share allowed
    assert model_reasons(_failed("n", 2), scored, 0.1) == ["model n: 2 of 10 items failed (20%, more than 10%)"]
    assert model_reasons(_failed("n", 2), scored, 0.2) == []
    # Every item of a model failed: it has no scored row at all, and 100% failed.
    assert model_reasons(_failed("gone", 3), scored, 0.5) == ["model gone: 3 of 3 items failed (100%, more than 50%)"]
    # A side step that failed on an item that was still scored does not count against the model.
    side = [Failure(stage="checks", model="m", item_id="i0", kind="check", scored=True)]
    assert model_reasons(side * 5, scored, 0.0) == []


def _call(outcome: str, error: str | None = None) -> CallRecord:
    return CallRecord(call_id="c", cache_key="k", role="judge", model="m", tag=None, attempt=0, cached=False,
                      outcome=outcome, error=error)  # type: ignore[arg-type]


def test_a_stage_with_every_call_failed_fails_the_run_and_one_good_call_saves_it():
    refused = [_call("failed", "AuthenticationError: 401"), _call("failed", "AuthenticationError: 401")]
    assert stage_reasons({"judge[m]": refused}) == [
        "stage judge[m]: every one of its 2 calls failed (AuthenticationError: 401 x2)"]
    # A server never reached says so: litellm files it as an InternalServerError, which alone reads as a 500.
    unreachable = _call("failed", "InternalServerError: litellm.InternalServerError: InternalServerError: "
                                  "OpenAIException - Connection error.")
    assert stage_reasons({"answers[m]": [unreachable] * 3}) == [
        "stage answers[m]: every one of its 3 calls failed (InternalServerError: OpenAIException - Connection "
        "error. x3)"]
    assert stage_reasons({"judge[m]": [*refused, _call("ok")]}) == []
    assert stage_reasons({"report": []}) == []  # a stage that sent nothing failed at nothing
    # Every failure read from the call cache (an earlier run's unreadable replies, past their fresh round): a
    # user who fixed the server would see the same failures and nothing sent, so the reason says why.
    replayed = _call("parse_error", "no valid JSON object in the reply").model_copy(update={"cached": True})
    assert stage_reasons({"judge[m]": [replayed] * 2}) == [
        "stage judge[m]: every one of its 2 calls failed (no valid JSON object in the reply x2); all read from the "
        "call cache, earlier runs' replies that a rerun does not ask again: give --cache a new file to ask the "
        "model afresh"]
    assert "call cache" not in stage_reasons({"judge[m]": [replayed, _call("parse_error", "no JSON")]})[0]


def _models(tmp_path: Path, loopback) -> str:
    path = tmp_path / "models.toml"
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\nschema_rules = "vllm"\n'
                    f'api_key_env = "{TEST_KEY_ENV}"\ntimeout = 5\n'
                    '[retry]\ntransient_attempts = 2\nbackoff_initial = 0.01\nbackoff_max = 0.02\n'
                    '[roles.steady]\nmodel = "openai/steady"\n[roles.down]\nmodel = "openai/down"\n')
    return str(path)


def _flow_run_states(name: str) -> list[str]:
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    async def read() -> list[str]:
        async with get_client() as client:
            runs = await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[name])))
            return [r.state.name for r in runs if r.state]

    return asyncio.run(read())


def test_a_model_that_never_answers_makes_the_run_failed_with_exit_3(harness, loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = lambda body: "I choose B."
    loopback.model_faults["down"] = "500"
    out = tmp_path / "run"
    before = _flow_run_states("rpbench-roleinteract").count("Failed")
    ran = rpbench("roleinteract", "run", "--data", str(sample_path("roleinteract", "example.json")), "--model",
                  "steady", "--model", "down", "--out", str(out), "--resamples", "50", "--models-file",
                  _models(tmp_path, loopback), "--cache", str(tmp_path / "c.sqlite"))
    assert ran.returncode == 3, ran.stdout + ran.stderr
    lines = [line for line in ran.stderr.strip().splitlines() if not re.match(r"\d\d:\d\d:\d\d", line)]  # not Prefect's log
    assert lines[0].startswith("failed roleinteract-answers: answer "), lines  # failures by stage and kind first
    assert any(line.startswith("run failed: model down: ") and "items failed (100%, more than 10%)" in line
               for line in lines), lines
    assert any(line.startswith("run failed: stage roleinteract-answers[down]: every one of its") for line in lines), lines
    assert not any("model steady" in line for line in lines)
    # What it did measure is printed as a run that passed prints it: the healthy model's score, the report.
    printed = ran.stdout.splitlines()
    assert any(line.startswith("steady: Avg ") and "n=21" in line for line in printed), ran.stdout
    assert any(line.startswith("down: mean of 0 columns - [-, -]  n=0") for line in printed), ran.stdout
    assert f"report: {out}/report.html" in ran.stdout
    # Everything was written: the tables, the report, the manifest saying why the run failed.
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["outcome"]["status"] == "failed" and manifest["outcome"]["max_failure_share"] == 0.1
    assert (out / "report.html").is_file() and (out / "answers.parquet").is_file()
    assert _flow_run_states("rpbench-roleinteract").count("Failed") == before + 1
    # The same run with only the healthy model succeeds, and says so.
    ok = rpbench("roleinteract", "run", "--data", str(sample_path("roleinteract", "example.json")), "--model",
                 "steady", "--out", str(tmp_path / "ok"), "--resamples", "50", "--models-file",
                 _models(tmp_path, loopback), "--cache", str(tmp_path / "c.sqlite"))
    assert ok.returncode == 0, ok.stderr
    assert json.loads((tmp_path / "ok" / "manifest.json").read_text())["outcome"]["status"] == "ok"


@pytest.mark.parametrize("share", ["1", "0.5"])
def test_a_stage_with_no_usable_reply_fails_the_run_whatever_the_share(share, harness, loopback, tmp_path,
                                                                       monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.model_faults["down"] = "500"
    ran = rpbench("roleinteract", "run", "--data", str(sample_path("roleinteract", "example.json")), "--model",
                  "down", "--out", str(tmp_path / "run"), "--resamples", "50", "--max-failure-share", share,
                  "--models-file", _models(tmp_path, loopback), "--cache", str(tmp_path / "c.sqlite"))
    assert ran.returncode == 3
    reasons = [line for line in ran.stderr.splitlines() if line.startswith("run failed: ")]
    assert any("stage roleinteract-answers[down]" in r for r in reasons)
    assert any("model down" in r for r in reasons) == (share != "1")


def test_the_run_summary_puts_what_went_wrong_first():
    from rpbench.tasks.reports.summary import run_summary_markdown

    manifest = {"outcome": {"status": "failed", "reasons": ["model down: 3 of 3 items failed (100%, more than 10%)"],
                            "failures": {"answers": {"answer": 3}}}, "row_counts": {"answers": 6}}
    text = run_summary_markdown(manifest, "runs/x")
    assert text.index("**The run failed**") < text.index("| answers | answer 3 |") < text.index("| table | rows |")
    assert "- model down: 3 of 3 items failed" in text
    assert "The run failed" not in run_summary_markdown({"outcome": {"status": "ok", "reasons": []}}, "runs/y")


def test_calls_at_no_known_price_are_said_beside_the_cost_not_counted_free():
    """A run on a model with no known price cost $0.0000 by its sum: the summary and the command's last line
    say how many calls that sum leaves out."""
    from rpbench.flows.kit.commands.settings_commands import stages_line
    from rpbench.tasks.reports.summary import run_summary_markdown

    manifest = {"outcome": {"status": "ok", "reasons": []},
                "totals": {"calls_sent": 560, "cost_usd": 0.0, "cost_unknown_calls": 560},
                "this_run": {"stages": 3, "cached": 0, "calls_sent": 560, "cost_usd": 0.0, "cost_unknown_calls": 560}}
    assert "- cost: $0.0000 (and 560 calls of unknown cost)" in run_summary_markdown(manifest, "runs/x")
    assert stages_line(manifest).endswith("calls sent by this run: 560, USD 0.0000 (and 560 calls of unknown cost)")
    priced = {**manifest, "this_run": {**manifest["this_run"], "cost_unknown_calls": 0}}
    assert stages_line(priced).endswith("USD 0.0000")


def test_a_refused_key_stops_the_run_at_once_with_one_line_and_exit_3(harness, loopback, tmp_path, monkeypatch):
    secret = "sk-test-refused-0123456789abcdef"
    monkeypatch.setenv(TEST_KEY_ENV, secret)
    loopback.model_faults["down"] = "401"  # the server refuses the key, and echoes it back
    path = tmp_path / "models-1.toml"
    path.write_text(Path(_models(tmp_path, loopback)).read_text().replace(
        'model = "openai/down"', 'model = "openai/down"\nmax_concurrency = 1'))
    before = _flow_run_states("rpbench-roleinteract").count("Failed")
    ran = rpbench("roleinteract", "run", "--data", str(sample_path("roleinteract", "example.json")), "--model",
                  "down", "--out", str(tmp_path / "run"), "--resamples", "50", "--models-file", str(path),
                  "--cache", str(tmp_path / "c.sqlite"))
    assert ran.returncode == 3, ran.stdout + ran.stderr
    ours = [line for line in ran.stderr.splitlines() if line.startswith("error: ")]
    assert ours == [f"error: model openai/down (role down) cannot be used: AuthenticationError: "
                    f"{ours[0].split('AuthenticationError: ', 1)[1]}"] and ours[0].endswith(f"read from {TEST_KEY_ENV}")
    assert secret not in ran.stdout + ran.stderr
    assert len([e for e in loopback.log if e.get("fault") == "401"]) == 1  # neither retried nor sent again
    assert _flow_run_states("rpbench-roleinteract").count("Failed") == before + 1


def test_a_missing_key_is_one_line_before_any_flow_or_request(loopback, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("RPBENCH_UNSET_KEY", raising=False)
    data = str(sample_path("roleinteract", "example.json"))
    # The provider's own variable, when the models file names none and no server of one's own is given.
    ran = rpbench("roleinteract", "run", "--data", data, "--model", "openai/gpt-4o-mini", "--out",
                  str(tmp_path / "a"))
    assert ran.returncode == 2 and ran.stderr.strip().splitlines() == [
        "error: --model: model openai/gpt-4o-mini (role roleinteract-player) needs its key in OPENAI_API_KEY, "
        "which is not set: export it where the run starts, or name another variable with api_key_env in a "
        "models file"]
    # A variable the models file names.
    models = tmp_path / "models.toml"
    models.write_text(f'[roles.mine]\nmodel = "openai/mine"\napi_base = "{loopback.base_url}"\nschema_rules = "vllm"\n'
                      'api_key_env = "RPBENCH_UNSET_KEY"\n')
    ran = rpbench("roleinteract", "run", "--data", data, "--model", "mine", "--out", str(tmp_path / "b"),
                  "--models-file", str(models))
    assert ran.returncode == 2 and "needs its key in RPBENCH_UNSET_KEY, which is not set" in ran.stderr
    assert not loopback.requests and not (tmp_path / "b").exists()
    # A server of one's own with no key variable named may take no key: not an error.
    from rpbench.tasks.llm.config import ModelSpec
    from rpbench.tasks.llm.keys import missing_key

    assert missing_key(ModelSpec(model="openai/mine", api_base=loopback.base_url)) is None
    assert missing_key(ModelSpec(model="anthropic/claude-3-5-haiku-20241022")) == "ANTHROPIC_API_KEY"


def test_a_model_litellm_cannot_route_is_one_line_before_any_flow_or_request(loopback, tmp_path, monkeypatch):
    """A models file binding a role to a bare name litellm does not know (or a misspelt provider): every request
    of the run failed with litellm's "LLM Provider NOT provided" (exit 3, after the run had started)."""
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    data = str(sample_path("roleinteract", "example.json"))
    models = tmp_path / "models.toml"
    for model in ("mine", "opnai/mine"):
        models.write_text(f'[roles.mine]\nmodel = "{model}"\napi_base = "{loopback.base_url}"\n'
                          f'api_key_env = "{TEST_KEY_ENV}"\n')
        ran = rpbench("roleinteract", "run", "--data", data, "--model", "mine", "--out", str(tmp_path / "o"),
                      "--models-file", str(models))
        assert ran.returncode == 2 and ran.stderr.strip().splitlines() == [
            f"error: --model: model {model} (role mine): litellm cannot tell which provider serves it (LLM "
            f"Provider NOT provided. Pass in the LLM provider you are trying to call. You passed model={model}); "
            "write it as <provider>/<model>, for example openai/gpt-4o, or hosted_vllm/<model> with api_base for "
            "a server of your own"], ran.stderr
    assert not loopback.requests and not (tmp_path / "o").exists()
    from rpbench.tasks.llm.config import ModelSpec
    from rpbench.tasks.llm.keys import unroutable

    # What litellm routes: a provider prefix, a name in its price map, a known endpoint; and our local models.
    for spec in (ModelSpec(model="hosted_vllm/mine", api_base=loopback.base_url), ModelSpec(model="gpt-4o"),
                 ModelSpec(model="mine", api_base="https://api.perplexity.ai"), ModelSpec()):
        assert unroutable(spec) is None, spec.model


def test_a_rerun_after_an_outage_sends_the_failed_items_again_and_heals(harness, loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = lambda body: "I choose B."
    args = ["roleinteract", "run", "--data", str(sample_path("roleinteract", "example.json")), "--model", "steady",
            "--out", str(tmp_path / "run"), "--resamples", "50", "--max-failure-share", "1",
            "--models-file", _models(tmp_path, loopback), "--cache", str(tmp_path / "c.sqlite")]
    loopback.random_faults(0.6, ("500",), seed=3)  # an outage: most requests fail, each retried once
    first = rpbench(*args)
    assert first.returncode == 0, first.stderr
    failed = {f["item_id"] for f in _table(tmp_path / "run" / "failures.parquet")}
    assert failed, "the outage failed nothing: the test would prove nothing"
    answered = 21 - len(failed)
    loopback.random_faults(0.0)
    loopback.requests.clear()
    # --keep-failures replays the earlier run exactly: nothing is sent, the failures stay.
    kept = rpbench(*args, "--keep-failures")
    assert kept.returncode == 0 and not loopback.requests
    assert {f["item_id"] for f in _table(tmp_path / "run" / "failures.parquet")} == failed
    # By default the rerun heals: only the failed items are sent again, and none is failed at the end.
    healed = rpbench(*args)
    assert healed.returncode == 0, healed.stderr
    assert len(loopback.requests) == len(failed) and answered + len(failed) == 21
    assert _table(tmp_path / "run" / "failures.parquet") == []
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["this_run"]["calls_sent"] == len(failed)


def _table(path: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


MODES_ON_SAMPLES = {
    "coser": ["coser", "run", "--data", str(sample_path("coser", "example.json")), "--limit", "1", "--max-rounds", "4"],
    "dmt": ["dmt", "run", "--seeds", str(sample_path("dmt", "seeds.yaml")), "--seed-id", "harbour-pilot-knowledge",
            "--max-rounds", "2"],
    "pingpong": ["pingpong", "run", "--settings", str(sample_path("pingpong", "settings.yaml")), "--character",
                 "Captain Mirela Voss", "--max-turns", "2"],
    "rolellm": ["rolellm", "eval", "--data", str(sample_path("rolellm", "rolebench")), "--limit", "2"],
    "characterbench": ["characterbench", "run", "--data", str(sample_path("characterbench", "engagement_test.json")),
                       "--limit", "2"],
}


@pytest.mark.parametrize("mode", list(MODES_ON_SAMPLES))
def test_a_model_whose_every_call_failed_stays_on_the_leaderboard(mode, harness, loopback, tmp_path, monkeypatch):
    """A model that scored nothing is on the board with no score and its failures counted, beside the others,
    in every mode (CoSER, DMT, PingPong and RoleLLM left it off: only the failures section named it)."""
    from tests.helpers import any_mode_responder

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = any_mode_responder
    loopback.model_faults["down"] = "500"
    models = _models(tmp_path, loopback)
    # Replies as the stand-in server gives them: each mode's JSON schema sent (vLLM's rules), no prompt-only JSON.
    Path(models).write_text(Path(models).read_text().replace("timeout = 5\n", 'timeout = 5\nstructured = "json_schema"\n'))
    out = tmp_path / "run"
    ran = rpbench(*MODES_ON_SAMPLES[mode], "--model", "steady", "--model", "down", "--out", str(out), "--models-file",
                  models, "--cache", str(tmp_path / "c.sqlite"), "--resamples", "50")
    assert ran.returncode == 3, ran.stderr[-2000:]  # failed by the rule, after writing everything
    board = {r["model"]: r for r in pq.read_table(out / "leaderboard.parquet").to_pylist()}
    assert board["down"]["n"] == 0 and board["down"]["failed"] > 0 and board["steady"]["n"] > 0
    assert any(line.startswith("down: ") and " - [-, -]" in line for line in ran.stdout.splitlines()), ran.stdout
