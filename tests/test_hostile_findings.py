"""What a hostile user found wrong, each as the one-line error (exit 2, no traceback, no flow started) it now gets."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from rpbench.samples import sample_path
from rpbench.storage.folder_lock import folder_lock
from tests.helpers import rpbench

BENCH = sample_path("rolellm", "rolebench")
ROLE_SPECIFIC = BENCH / "rolebench-eng" / "instruction-generalization" / "role_specific"
PINGPONG = sample_path("pingpong", "settings.yaml")
ROLEINTERACT = sample_path("roleinteract", "example.json")


@pytest.fixture
def no_flow(monkeypatch):
    """A command that starts a flow fails the test: these errors come before any."""
    import rpbench.flows.kit.running.run as run

    def refuse(*_args, **_kwargs):
        raise AssertionError("a flow was started")

    monkeypatch.setattr(run, "run_flow", refuse)


def _refused(ran, *phrases: str) -> None:
    assert ran.returncode == 2, (ran.returncode, ran.stdout[-1500:], ran.stderr[-1500:])
    assert "Traceback" not in ran.stderr and "Beginning flow run" not in ran.stderr
    line = ran.stderr.strip().splitlines()[-1]
    for phrase in phrases:
        assert phrase in line, line


def test_rolellm_answers_that_answer_no_question_are_refused_at_once(tmp_path, no_flow):
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "example:00001", "answer": "B"}\n{"id": "example:00002", "answer": "C"}\n')
    ran = rpbench("rolellm", "eval", "--data", str(ROLE_SPECIFIC / "test.jsonl"), "--profiles",
                  str(BENCH / "profiles-eng"), "--model", "rolellm-player", "--answers", f"given={other}",
                  "--out", str(tmp_path / "run"))
    _refused(ran, f"{other}: line 1: answers none of the", "id 'example:00001'")


def test_rolellm_answers_of_an_unknown_role_are_refused(tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"role": "Nobody", "question": "Who are you?", "answer": "No one."}) + "\n")
    ran = rpbench("rolellm", "eval", "--data", str(ROLE_SPECIFIC / "test.jsonl"), "--profiles",
                  str(BENCH / "profiles-eng"), "--answers", f"given={other}", "--out", str(tmp_path / "run"))
    _refused(ran, "role 'Nobody'")


def test_an_empty_models_file_is_an_error_not_the_embedded_model(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("# nothing here yet\n\n")
    ran = rpbench("models", "--models-file", str(empty))
    _refused(ran, f"{empty}: the models file sets nothing")


def _run_folder(path: Path, manifest: bytes | None = None) -> Path:
    path.mkdir(parents=True)
    (path / "manifest.json").write_bytes(manifest or json.dumps({"flow": "x", "outcome": {"status": "ok"}}).encode())
    return path


def test_report_refuses_a_run_given_twice_before_writing_anything(tmp_path):
    run = _run_folder(tmp_path / "run")
    ran = rpbench("report", str(run), str(tmp_path / "." / "run"), "--out", str(tmp_path / "index"))
    _refused(ran, "given twice")
    assert not (tmp_path / "index").exists()


def test_report_on_a_manifest_that_is_not_utf8(tmp_path):
    run = _run_folder(tmp_path / "run", b'{"flow": "\xff"}')
    _refused(rpbench("report", str(run), "--out", str(tmp_path / "index")), "manifest.json: not UTF-8")


@pytest.mark.parametrize(("manifest", "phrase"), [(b"{broken", "manifest.json: not JSON (Expecting property name"),
                                                  (b"[]", "manifest.json: not a JSON object")])
def test_a_damaged_manifest_is_named_by_report_and_refused_as_a_runs_folder_before_any_flow(tmp_path, manifest,
                                                                                            phrase, no_flow):
    """A manifest.json that is not a JSON object (damaged, or written by hand; rpbench writes it atomically): the
    index named nothing for a list (a traceback), and a run into its folder did all its work, then failed with
    a traceback writing its own manifest over it."""
    run = _run_folder(tmp_path / "run", manifest)
    _refused(rpbench("report", str(run), "--out", str(tmp_path / "index")), phrase)
    _refused(rpbench("roleinteract", "run", "--data", str(ROLEINTERACT), "--model", "roleinteract-player",
                     "--out", str(run)), str(run / "manifest.json"), phrase)
    suite_run = _run_folder(tmp_path / "suite" / "roleinteract", manifest)  # a suite's run of one benchmark
    _refused(rpbench("suite", "run", "--mode", "roleinteract", "--model", "test", "--out", str(tmp_path / "suite")),
             str(suite_run / "manifest.json"), phrase)


@pytest.mark.parametrize(("name", "content", "phrase"), [
    ("leaderboard.parquet", b"not parquet", "leaderboard.parquet: not a readable Parquet file"),
    ("viewer.html", b'<html><script type="application/json" id="viewer-data">{"title": "x"}</script>',
     "viewer.html: its viewer data is not what rpbench writes"),
    ("viewer.html", b"<html>\xff\xfe", "viewer.html: 'utf-8' codec can't decode"),
])
def test_report_on_a_damaged_table_or_viewer_names_the_file(tmp_path, name, content, phrase):
    """A run folder's leaderboard that is not Parquet was pyarrow's traceback; a viewer page whose data lacks its
    samples was a KeyError."""
    run = _run_folder(tmp_path / "run")
    (run / name).write_bytes(content)
    _refused(rpbench("report", str(run), "--out", str(tmp_path / "index")), phrase)
    assert not (tmp_path / "index" / "index.html").exists()


def test_report_on_a_folder_whose_name_is_not_utf8(tmp_path):
    name = os.fsdecode(b"run-\xe9t\xe9")
    run = _run_folder(tmp_path / name)
    _refused(rpbench("report", str(run), "--out", str(tmp_path / "index")), "not UTF-8", "rename it")


def test_report_does_not_write_into_a_folder_another_command_holds(tmp_path):
    run = _run_folder(tmp_path / "run")
    busy = tmp_path / "busy"
    busy.mkdir()
    with folder_lock(busy):
        ran = rpbench("report", str(run), "--out", str(busy))
    _refused(ran, "in use by")
    assert not (busy / "index.html").exists()


@pytest.mark.parametrize("rows,phrase", [  # an empty file; a role with no profile
    ("", "train.jsonl: the file holds no rows"),
    (json.dumps({"role": "Nobody", "question": "Who?", "generated": ["No one."], "type": ["script_based"]}) + "\n",
     "field 'role': no profile for role 'Nobody'"),
])
def test_train_refuses_data_it_cannot_use_before_any_flow(tmp_path, rows, phrase, no_flow):
    data = tmp_path / "train.jsonl"
    data.write_text(rows)
    ran = rpbench("train", "--data", str(data), "--profiles", str(BENCH / "profiles-eng"), "--out",
                  str(tmp_path / "out"), "--max-steps", "1")
    _refused(ran, phrase)


@pytest.mark.parametrize("given,phrase", [("={file}", "the name before '=' is empty"),
                                          ("x={folder}", "a folder, not a file of answers")])
def test_answers_with_an_empty_name_or_a_folder(tmp_path, given, phrase):
    file = tmp_path / "a.jsonl"
    file.write_text('{"id": "example:00000", "answer": "B"}\n')
    value = given.format(file=file, folder=tmp_path)
    ran = rpbench("roleinteract", "run", "--data", str(ROLEINTERACT), "--answers", value, "--out",
                  str(tmp_path / "run"))
    _refused(ran, phrase)


def test_pingpong_answers_with_more_turns_than_the_situation_are_refused(tmp_path, no_flow):
    from rpbench.tasks.modes.pingpong.cards import conversation_id, load_settings

    card, situation = load_settings(str(PINGPONG)).conversations()[0]
    cid = conversation_id(card, situation)
    path = tmp_path / "long.jsonl"
    turns = [{"user": f"u{k}", "player": f"p{k}"} for k in range(situation.num_turns + 76)]
    path.write_text(json.dumps({"id": cid, "turns": turns}) + "\n")
    ran = rpbench("pingpong", "run", "--settings", str(PINGPONG), "--answers", f"long={path}", "--version", "v2",
                  "--out", str(tmp_path / "run"))
    _refused(ran, f"conversation '{cid}': {situation.num_turns + 76} turns, but its situation has "
                  f"{situation.num_turns}")


def test_a_typo_on_the_command_line_is_reported_as_the_command_lines(tmp_path):
    models = tmp_path / "models.toml"
    models.write_text('[default]\nmodel = "local/smollm2-135m"\n[roles.test-a]\nmodel = "local/smollm2-135m"\n')
    ran = rpbench("roleinteract", "run", "--data", str(ROLEINTERACT), "--model", "tset-a", "--models-file",
                  str(models), "--out", str(tmp_path / "run"))
    _refused(ran, "--model", "unknown model 'tset-a'", "did you mean 'test-a'?")
    assert "[roles.test-a]" not in ran.stderr


def test_a_suite_file_over_8_mb_is_refused(tmp_path):
    big = tmp_path / "big.toml"
    big.write_text("[roleinteract]\ndata = ['x.json']\n" + "# padding\n" * (9 * 2**20 // 10))
    _refused(rpbench("suite", "run", "--suite", str(big), "--model", "test", "--out", str(tmp_path / "s")),
             "over the 8 MB limit")


@pytest.mark.parametrize("command", [["suite", "run"], ["rolellm", "context-instruct"], ["build"],
                                     ["pingpong", "rejudge"]])
def test_limit_is_an_option_of_every_command_that_calls_models(command):
    ran = rpbench(*command, "--help")
    assert ran.returncode == 0 and "--limit" in ran.stdout


def test_suite_limit_reaches_every_benchmark_of_the_suite(tmp_path):
    from rpbench.flows.suite.plan import plan_suite
    from rpbench.flows.suite.settings import SuiteSettings

    plan = plan_suite(SuiteSettings(models=["test"], limit=2, out=str(tmp_path / "s")))
    limits = {(p.mode.name, r.name): r.settings.limit for p in plan.modes for r in p.runs  # type: ignore[attr-defined]
              if "limit" in type(r.settings).model_fields}
    assert limits and set(limits.values()) == {2}, limits


def test_context_instruct_limit_keeps_the_first_roles(tmp_path):
    from rpbench.flows.modes.rolellm.checks import check_roles
    from rpbench.flows.modes.rolellm.settings import ContextInstructSettings

    roles = tmp_path / "roles"
    shutil.copytree(sample_path("rolellm", "roles"), roles)
    every = check_roles(ContextInstructSettings(roles=[str(roles)], min_turns=0))[1]
    first = check_roles(ContextInstructSettings(roles=[str(roles)], min_turns=0, limit=1))[1]
    assert len(every) == 2 and list(first) == sorted(every)[:1]


def test_a_judge_bound_to_the_model_under_test_is_pointed_out(tmp_path):
    from rpbench.flows.kit.running.self_judging import self_judging
    from rpbench.flows.modes.pingpong.settings import PingPongSettings
    from rpbench.tasks.llm import load_models_config

    models = tmp_path / "models.toml"
    models.write_text('[default]\nmodel = "openai/gpt-4.1-mini"\n'
                      '[roles.mine]\nmodel = "openai/gpt-4.1"\n[roles.other-judge]\nmodel = "openai/o3"\n')
    config = load_models_config(models)

    def lines(judges: list[str]) -> list[str]:
        return self_judging(PingPongSettings(settings=str(PINGPONG), models=["mine"], judges=judges), config)

    assert lines(["openai/gpt-4.1", "other-judge"]) == [
        "judge 'openai/gpt-4.1' is the same model as the model(s) under test mine (openai/gpt-4.1): it scores its "
        "own answers, and LLM judges favour their own"]
    assert lines(["other-judge"]) == []
    assert lines(["pingpong-judge"]) == []  # [default]: another model than mine


@pytest.mark.parametrize("command", [
    ["characterbench", "run", "--data", str(sample_path("characterbench", "engagement_test.json")), "--model", "x"],
    ["pingpong", "rejudge", "runs/none", "--judge", "judge"],
    ["suite", "run", "--model", "x"],
])
def test_too_few_resamples_for_a_95_percent_interval_are_refused(command, tmp_path):
    """With one resample the interval was [3.00, 3.00] around a score of 3.50: a 95% interval needs resamples in
    both of its 2.5% tails, 40 or more."""
    ran = rpbench(*command, "--out", str(tmp_path / "o"), "--resamples", "39")
    assert ran.returncode == 2 and "--resamples: Input should be greater than or equal to 40" in ran.stderr, ran.stderr


def test_a_misspelt_dmt_format_says_which_was_meant(tmp_path):
    ran = rpbench("dmt", "run", "--seeds", str(sample_path("dmt", "seeds.yaml")), "--model", "x", "--format",
                  "minimal", "--out", str(tmp_path / "o"))
    assert ran.returncode == 2 and ran.stderr.strip() == (
        "error: --format: unknown format 'minimal' (did you mean minimalist? use minimalist, overview, detailed)")
