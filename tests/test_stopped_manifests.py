"""A run that stops before its end writes the manifest a finished run writes (issue 80): what it spent, what it
read, every role's settings, and why it stopped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import TEST_KEY_ENV, rpbench

pytestmark = pytest.mark.usefixtures("harness")
EXAMPLE = Path(__file__).resolve().parent.parent / "samples" / "roleinteract" / "example.json"
SECTIONS = ("totals", "this_run", "release_files", "role_settings", "prompt_templates", "outcome")


def test_a_run_stopped_by_a_model_it_cannot_use_writes_a_whole_manifest(loopback, tmp_path):
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\nmax_concurrency = 1\n[retry]\ntransient_attempts = 1\n',
                      encoding="utf-8")
    loopback.responder = lambda body: "I choose B."
    loopback.inject("401", 100)  # the key is refused: the run stops at its first reply
    ran = rpbench("roleinteract", "run", "--data", str(EXAMPLE), "--model", "test", "--out", str(tmp_path / "run"),
                  "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite"), env={TEST_KEY_ENV: "k"})
    assert ran.returncode == 3 and "cannot be used" in ran.stderr, ran.stderr[-2000:]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert all(key in manifest for key in SECTIONS), sorted(set(SECTIONS) - set(manifest))
    outcome = manifest["outcome"]
    assert outcome["status"] == "stopped" and outcome["stopped_by"] == "model" and "cannot be used" in outcome["reasons"][0]
    assert manifest["this_run"]["calls_sent"] == manifest["totals"]["calls"] >= 1  # the refused call, sent
    assert any("dataset.py" in k for k in manifest["release_files"])


def test_a_stopped_runs_report_says_it_stopped_not_an_earlier_runs_scores(loopback, tmp_path):
    """A finished run, then the same folder run again for another model whose key is refused: report.md and
    report.html now say what the manifest says (stopped, why, what was sent), no longer the first run's scores."""
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\nmax_concurrency = 1\n[retry]\ntransient_attempts = 1\n',
                      encoding="utf-8")
    loopback.responder = lambda body: "I choose B."
    args = ["roleinteract", "run", "--data", str(EXAMPLE), "--out", str(tmp_path / "run"), "--models-file",
            str(models), "--cache", str(tmp_path / "calls.sqlite")]
    finished = rpbench(*args, "--model", "test", env={TEST_KEY_ENV: "k"})
    assert finished.returncode == 0, finished.stderr[-2000:]
    report = tmp_path / "run" / "report.md"
    assert "| test |" in report.read_text()  # the leaderboard's row
    loopback.inject("401", 100)
    stopped = rpbench(*args, "--model", "openai/other", env={TEST_KEY_ENV: "k"})
    assert stopped.returncode == 3, stopped.stderr[-2000:]
    text = report.read_text()
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert text.startswith(f"# rpbench run `{tmp_path / 'run'}`: stopped") and "cannot be used" in text
    assert f"- calls: {manifest['totals']['calls']} " in text and "| test |" not in text
    assert "stopped" in (tmp_path / "run" / "report.html").read_text()
