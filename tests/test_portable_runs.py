"""A run folder moved elsewhere still works: its manifest records the files and folders its settings name
relative to itself, so a moved ``runs/`` tree keeps finding the benchmark an evaluation was run on; a
path in a manifest that no longer leads anywhere is an error naming the manifest and its field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from rpbench.flows.kit.front.registry import modes
from rpbench.storage.recorded_paths import PATHS_KEY, PATHS_RELATIVE
from tests.helpers import TEST_KEY_ENV, any_mode_responder, rpbench


def test_a_moved_runs_tree_is_annotated_reported_and_evaluated_again(tmp_path, monkeypatch, loopback):
    first, later = tmp_path / "first-place", tmp_path / "somewhere" / "else"
    first.mkdir()
    later.mkdir(parents=True)
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\nschema_rules = "vllm"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\nstructured = "json_schema"\n')
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = any_mode_responder
    cache = tmp_path / "calls.sqlite"
    monkeypatch.chdir(first)
    for step in modes()["furina"].smoke_steps(Path("runs")):  # relative paths, as a user types them
        extra = ["--models-file", str(models), "--cache", str(cache)] if step.uses_models else []
        ran = rpbench(*step.args, *extra)
        assert ran.returncode == 0, f"{step.name}: {ran.stderr[-2000:]}"
    manifest = json.loads((first / "runs" / "eval" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest[PATHS_KEY] == PATHS_RELATIVE
    assert manifest["evaluation_settings"]["bench"] == "../bench"
    assert manifest["evaluation_settings"]["out"] == "."

    shutil.move(first / "runs", later / "runs")
    monkeypatch.chdir(tmp_path)  # neither where the runs were made nor where they are now
    moved = later / "runs"
    pushed = rpbench("annotate", "push", "--eval", str(moved / "eval"), "--task", "pairwise", "--dry-run")
    assert pushed.returncode == 0, pushed.stderr
    assert "dry run: " in pushed.stdout and " pairwise tasks from " in pushed.stdout and "nothing sent" in pushed.stdout
    unaddressed = rpbench("annotate", "push", "--eval", str(moved / "eval"), "--task", "pairwise")
    assert unaddressed.returncode == 2 and "--url and --project are needed" in unaddressed.stderr
    reported = rpbench("report", str(moved / "eval"), "--out", str(tmp_path / "index"))
    assert reported.returncode == 0, reported.stderr
    assert (tmp_path / "index" / "index.html").is_file()
    # The moved benchmark evaluated again with the same cache: every call is found there, nothing is sent.
    again = rpbench("eval", "--bench", str(moved / "bench"), "--model", "test", "--model", "source", "--out",
                    str(moved / "eval-again"), "--resamples", "200", "--models-file", str(models), "--cache",
                    str(cache))
    assert again.returncode == 0, again.stderr
    sent = json.loads((moved / "eval-again" / "manifest.json").read_text(encoding="utf-8"))["this_run"]["calls_sent"]
    assert sent == 0

    shutil.rmtree(moved / "bench")  # the evaluation moved without its benchmark
    lost = rpbench("annotate", "push", "--eval", str(moved / "eval"), "--task", "pairwise", "--dry-run")
    assert lost.returncode == 2
    assert f"{moved / 'eval' / 'manifest.json'}: field 'evaluation_settings.bench'" in lost.stderr
    assert str(moved / "bench") in lost.stderr and "Traceback" not in lost.stderr



def test_settings_record_files_and_folders_relative_to_the_manifest(tmp_path, monkeypatch):
    from rpbench.flows.modes.furina.settings import EvalSettings
    from rpbench.flows.modes.rolellm.settings import ContextInstructSettings

    monkeypatch.chdir(tmp_path)
    s = EvalSettings(bench="runs/bench", models=["local/x"], out="runs/eval")
    recorded = s.recorded(s.out)
    assert (recorded["bench"], recorded["out"]) == ("../bench", ".")
    assert recorded["models"] == ["local/x"]  # a model name is not a path, even with a slash in it
    assert "models_file" not in recorded and "cache" not in recorded
    roles = ContextInstructSettings(roles=[str(tmp_path / "roles" / "a.yaml"), "b.yaml"], out="out/ci")
    assert roles.recorded(roles.out)["roles"] == ["../../roles/a.yaml", "../../b.yaml"]
