"""The last hostile findings on plans, folders and settings, each held by a test that failed before its fix: a
plan's range holds the run whatever the generator decides, counts are whole numbers, a plan honours a running
run's lock, a command prints its own plan only, a folder holding another benchmark's run is refused, and batch
settings are checked before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rpbench.flows.kit.front.registry import modes
from rpbench.samples import sample_path
from tests.helpers import TEST_KEY_ENV, loopback_models_file, rpbench, stand_in_responder

pytestmark = pytest.mark.usefixtures("harness")


def _step(mode: str, name: str, work: Path):
    return next(s for s in modes()[mode].smoke_steps(work) if s.name == name)


def _lo(value):
    return value[0] if isinstance(value, list) else value


def _hi(value):
    return value[1] if isinstance(value, list) else value


def test_dmts_plan_holds_a_run_whose_generator_ends_dialogues_anywhere(loopback, tmp_path, monkeypatch):
    """DMT's generator decides when a dialogue has served its purpose: the plan's low (every dialogue ended at its
    first chance) and high (none ended early) hold a run that ends some early and some late."""
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    step = _step("dmt", "dmt", tmp_path / "work")
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    shared = ["--models-file", str(models), "--cache", str(tmp_path / "c.sqlite")]
    planned = rpbench(*step.args, *shared, "--plan", "--json")
    assert planned.returncode == 0, planned.stderr[-2000:]
    total = json.loads(planned.stdout.strip().splitlines()[-1])["total"]
    asked = {"n": 0}

    def respond(body: dict) -> str:
        name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
        if name == "Termination":  # done at every other check: dialogues of every length
            asked["n"] += 1
            return json.dumps({"reason": "enough", "done": asked["n"] % 2 == 0})
        return stand_in_responder(body)

    loopback.responder = respond
    ran = rpbench(*step.args, *shared)
    assert ran.returncode == 0, ran.stderr[-2000:]
    sent = len(loopback.requests)
    assert _lo(total["calls"]) <= sent <= _hi(total["calls"]), (total["calls"], sent)
    assert all(isinstance(v, int) for v in (total["calls"] if isinstance(total["calls"], list) else [total["calls"]]))


def test_a_plans_counts_are_whole_numbers(loopback, tmp_path, monkeypatch):
    """FURINA's build planned after its pool (a step whose low pass never reaches some rows) prints calls and
    tokens as whole numbers."""
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = stand_in_responder
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    shared = ["--models-file", str(models), "--cache", str(tmp_path / "c.sqlite")]
    for step in modes()["furina"].smoke_steps(tmp_path / "work"):
        if step.name == "build":
            planned = rpbench(*step.args, *shared, "--plan", "--json")
            assert planned.returncode == 0, planned.stderr[-2000:]
            plan = json.loads(planned.stdout.strip().splitlines()[-1])
            for row in [*plan["stages"], plan["total"]]:
                for key in ("calls", "prompt_tokens", "reply_tokens"):
                    values = row[key] if isinstance(row[key], list) else [row[key]]
                    assert all(type(v) is int for v in values), (key, row[key])
            return
        ran = rpbench(*step.args, *(shared if step.uses_models else []))
        assert ran.returncode == 0, ran.stderr[-2000:]
    raise AssertionError("FURINA's smoke scenario has no build step")


def test_a_plan_into_a_folder_a_run_holds_is_refused(tmp_path):
    from rpbench.storage.folder_lock import folder_lock

    out = tmp_path / "run"
    out.mkdir()
    step = _step("roleinteract", "roleinteract", tmp_path / "work")
    args = [*step.args[:step.args.index("--out") + 1], str(out), "--plan"]
    with folder_lock(out):
        ran = rpbench(*args)
    assert ran.returncode == 2 and "--out" in ran.stderr and not (out / "plan.json").exists()


def test_a_rejudge_does_not_print_the_earlier_runs_plan_as_its_own(loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = stand_in_responder
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    shared = ["--models-file", str(models), "--cache", str(tmp_path / "c.sqlite")]
    steps = modes()["pingpong"].smoke_steps(tmp_path / "work")
    run, rejudge = steps[0], steps[1]
    assert rpbench(*run.args, *shared, "--plan").returncode == 0
    first = rpbench(*run.args, *shared)
    assert first.returncode == 0 and "planned:" in first.stdout
    again = rpbench(*rejudge.args, *shared)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "planned:" not in again.stdout.splitlines()[-2]  # the stages line: no plan of its own was made


def test_a_folder_holding_another_benchmarks_run_is_refused(loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = stand_in_responder
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    shared = ["--models-file", str(models), "--cache", str(tmp_path / "c.sqlite")]
    ri = _step("roleinteract", "roleinteract", tmp_path / "work")
    assert rpbench(*ri.args, *shared).returncode == 0
    dmt = _step("dmt", "dmt", tmp_path / "work")
    args = [*dmt.args[:dmt.args.index("--out") + 1], str(ri.out), *dmt.args[dmt.args.index("--out") + 2:]]
    sent = len(loopback.requests)
    ran = rpbench(*args, *shared)
    assert ran.returncode == 2 and len(loopback.requests) == sent
    assert ran.stderr.strip() == (f"error: --out {ri.out}: the folder holds a finished roleinteract run "
                                  "(roleinteract); give this dmt run a folder of its own")
    assert not (ri.out / "dialogues.parquet").exists()


def test_a_folder_holding_another_flows_run_of_the_same_benchmark_is_refused(tmp_path):
    """A FURINA benchmark given as its evaluation's --out was accepted, and the evaluation's manifest replaced
    the build's; a rerun of the same flow, and PingPong's rejudge in its run's folder, still write there."""
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "manifest.json").write_text(json.dumps({"flow": "build-benchmark"}))
    ran = rpbench("furina", "eval", "--bench", str(bench), "--model", "test", "--out", str(bench))
    assert ran.returncode == 2 and ran.stderr.strip() == (
        f"error: --out {bench}: the folder holds a finished build-benchmark run of furina; give this evaluate run "
        "a folder of its own (its manifest would replace that one's)")
    assert json.loads((bench / "manifest.json").read_text()) == {"flow": "build-benchmark"}
    (bench / "manifest.json").write_text(json.dumps({"flow": "evaluate"}))  # an evaluation's own folder: its rerun
    ran = rpbench("furina", "eval", "--bench", str(bench), "--model", "test", "--out", str(bench))
    assert ran.returncode == 2 and "no items.parquet" in ran.stderr  # past the folder check, to the bench's
    (bench / "manifest.json").write_text(json.dumps({"flow": "pingpong"}))
    ran = rpbench("pingpong", "rejudge", str(bench), "--judge", "judge", "--out", str(bench))
    assert ran.returncode == 2 and "not a finished PingPong run (no conversations.parquet" in ran.stderr, ran.stderr
    (bench / "manifest.json").write_text(json.dumps({"flow": "pingpong-rejudge"}))  # and the run again after it
    ran = rpbench("pingpong", "run", "--settings", str(sample_path("pingpong", "settings.yaml")), "--model",
                  "no-such-role", "--out", str(bench))
    assert ran.returncode == 2 and "unknown model 'no-such-role'" in ran.stderr, ran.stderr
    # A rejudge of another benchmark's run (no --out: it writes where it reads) was told about an --out it was
    # never given; it is told the run it named is not a PingPong run.
    (bench / "manifest.json").write_text(json.dumps({"flow": "characterbench"}))
    ran = rpbench("pingpong", "rejudge", str(bench), "--judge", "judge")
    assert ran.returncode == 2 and ran.stderr.strip() == (
        f"error: {bench}: not a finished PingPong run (no conversations.parquet; run `rpbench pingpong run --out` "
        "into it first)"), ran.stderr


@pytest.mark.parametrize(("setting", "message"), [
    ('batch = "yes"', "field 'roles.judge.batch': Input should be a valid boolean"),
    ("batch = true", "batch: hosted_vllm/qwen at http://127.0.0.1:9/v1 sends batches through an OpenAI-style "
                     "files API, whose client needs a key: give api_key_env"),
])
def test_batch_settings_are_checked_before_anything_runs(tmp_path, setting, message):
    models = tmp_path / "models.toml"
    models.write_text(f'[roles.judge]\nmodel = "hosted_vllm/qwen"\napi_base = "http://127.0.0.1:9/v1"\n{setting}\n')
    ran = rpbench("models", "--models-file", str(models))
    assert ran.returncode == 2 and message in ran.stderr and "Traceback" not in ran.stderr


def test_the_batch_option_on_a_server_with_no_key_names_the_role(tmp_path):
    models = tmp_path / "models.toml"
    models.write_text('[default]\nmodel = "hosted_vllm/qwen"\napi_base = "http://127.0.0.1:9/v1"\n')
    step = _step("roleinteract", "roleinteract", tmp_path / "work")
    ran = rpbench(*step.args, "--models-file", str(models), "--batch")
    assert ran.returncode == 2 and "--batch: role default: hosted_vllm/qwen" in ran.stderr, ran.stderr
