"""A model string gets a real model's settings: with no models file, models named as ``openai/...`` strings are
sent the settings their mode gives a real model (the releases' own), never the embedded 135M model's tuning, and
a run that leaves one of its roles on the embedded model beside real ones says so before it starts."""

from __future__ import annotations

import json

import pytest

from rpbench.samples import sample_path
from tests.helpers import any_mode_responder, rpbench

pytestmark = pytest.mark.usefixtures("harness")


@pytest.fixture
def openai_at_loopback(loopback, monkeypatch):
    """``openai/...`` model strings reach the loopback server, with no models file (litellm reads both)."""
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-not-a-key")
    # The stand-in answers each request by the schema it carries: ask for one even where the release's prompt
    # states its JSON itself (a real model gets none by default).
    monkeypatch.setenv("RPBENCH_DEFAULT_STRUCTURED", "json_schema")
    loopback.responder = any_mode_responder
    return loopback


def _judge_or_any(body: dict) -> str:
    """PingPong's judge: a verdict for every turn the transcript holds, explanations far past 48 characters (the
    embedded model's cap); any other request as ``any_mode_responder``."""
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    if name != "PingPongVerdicts":
        return any_mode_responder(body)
    turns = str(body["messages"][-1]["content"]).count("\nTurn ")
    why = "The player quotes 'aye' and keeps the captain's gruff voice throughout; I agree that it fits."
    return json.dumps({"scores": [{"turn": k, "is_refusal_explanation": why, "is_refusal": False,
                                   "in_character_explanation": why, "in_character_score": 4,
                                   "entertaining_explanation": why, "entertaining_score": 4,
                                   "fluency_explanation": why, "fluency_score": 5} for k in range(1, turns + 1)]})


def _sent(server) -> list[dict]:
    return [b for b in server.requests if b.get("model", "").startswith("gpt-")]


def test_pingpong_model_strings_get_the_releases_settings(openai_at_loopback, tmp_path, monkeypatch):
    monkeypatch.setenv("RPBENCH_INTERROGATOR_MODEL", "openai/gpt-4o-mini")
    openai_at_loopback.responder = _judge_or_any
    ran = rpbench("pingpong", "run", "--settings", str(sample_path("pingpong", "settings.yaml")),
                  "--model", "openai/gpt-4o", "--judge", "openai/gpt-4.1", "--limit", "2", "--max-turns", "2",
                  "--out", str(tmp_path / "pp"), "--cache", str(tmp_path / "c.sqlite"), "--resamples", "40")
    assert ran.returncode == 0, ran.stderr[-2000:]
    sent = _sent(openai_at_loopback)
    assert sent and not any("repetition_penalty" in b for b in sent)
    by_model = {b["model"]: b for b in sent}
    player, judge, user = by_model["gpt-4o"], by_model["gpt-4.1"], by_model["gpt-4o-mini"]
    # ping_pong_bench's own settings: player 0.6 / 0.9 / 1536, interrogator 0.8 / 0.95 / 1024, judge 0.1 / 0.95 / 4096.
    assert (player["temperature"], player["top_p"], player["max_tokens"]) == (0.6, 0.9, 1536)
    assert (user["temperature"], user["top_p"], user["max_tokens"]) == (0.8, 0.95, 1024)
    assert (judge["temperature"], judge["top_p"], judge["max_tokens"]) == (0.1, 0.95, 4096)
    # No 48-character cap on the judge's explanations: each conversation judged in one call, never re-asked.
    judged = [b for b in sent if b["model"] == "gpt-4.1"]
    assert len(judged) == 2 and "maxLength\": 48" not in json.dumps(judged)
    assert "embedded local model" not in ran.stdout + ran.stderr


def test_roleinteract_and_rolellm_model_strings_get_no_short_caps(openai_at_loopback, tmp_path):
    ran = rpbench("roleinteract", "run", "--data", str(sample_path("roleinteract", "example.json")),
                  "--model", "openai/gpt-4o-mini", "--out", str(tmp_path / "ri"), "--cache", str(tmp_path / "c.sqlite"),
                  "--resamples", "40")
    assert ran.returncode == 0, ran.stderr[-2000:]
    sent = _sent(openai_at_loopback)
    # SocialBench sends no sampling setting: no temperature; a 512-token cap where the embedded model has 96.
    assert sent and all(b["max_tokens"] == 512 and "temperature" not in b and "repetition_penalty" not in b
                        for b in sent)


def test_a_run_with_a_role_left_on_the_embedded_model_says_so_before_it_starts(openai_at_loopback, tmp_path):
    """PingPong's interrogator, bound by nothing, stays on the embedded model beside a real player and judge:
    the plan (which sends nothing) already says which role, and how to bind it."""
    ran = rpbench("pingpong", "run", "--settings", str(sample_path("pingpong", "settings.yaml")),
                  "--model", "openai/gpt-4o", "--judge", "openai/gpt-4.1", "--limit", "1", "--max-turns", "1",
                  "--out", str(tmp_path / "pp"), "--plan")
    assert ran.returncode == 0, ran.stderr[-2000:]
    said = ran.stdout + ran.stderr
    assert "roles interrogator run on the embedded local model" in said, said[-1500:]
    assert "RPBENCH_<ROLE>_MODEL" in said


def test_a_run_reads_its_models_file_once_and_records_its_digest(loopback, tmp_path, monkeypatch):
    """The command, its checks, plan, stages and manifest share one reading of the models file (each used to
    parse and validate it again); an edit is read on the next run of the same process."""
    import hashlib

    from rpbench.tasks.llm import config as config_module

    reads: list[str] = []
    real = config_module.load_models_config

    def counted(path=None, *args, **kwargs):
        reads.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(config_module, "load_models_config", counted)
    monkeypatch.setenv("RPBENCH_TEST_KEY", "k")
    loopback.responder = any_mode_responder
    models = tmp_path / "models.toml"
    models.write_text(f'[roles.tester]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\n'
                      'api_key_env = "RPBENCH_TEST_KEY"\n', encoding="utf-8")

    def run(out: str):
        return rpbench("roleinteract", "run", "--data", str(sample_path("roleinteract", "example.json")),
                       "--model", "tester", "--models-file", str(models), "--out", str(tmp_path / out),
                       "--cache", str(tmp_path / "c.sqlite"), "--resamples", "40")

    ran = run("first")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert reads == [str(models)]
    manifest = json.loads((tmp_path / "first" / "manifest.json").read_text())
    assert manifest["models_file_sha256"] == hashlib.sha256(models.read_bytes()).hexdigest()
    models.write_text(models.read_text() + "max_tokens = 77\n", encoding="utf-8")
    ran = run("second")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert len(reads) == 2  # the edit is seen, once
    assert {b.get("max_tokens") for b in loopback.requests[-3:]} == {77}


def test_the_models_file_help_names_every_shipped_preset():
    """The option's help once named two presets while eight shipped: it is made from the presets folder."""
    from rpbench.flows.kit.front.settings import ModelsFileSettings
    from rpbench.tasks.llm.config import presets

    described = ModelsFileSettings.model_fields["models_file"].description or ""
    assert len(presets()) >= 8
    assert all(name in described for name in presets())


def test_a_models_file_s_default_leaves_a_benchmark_s_sampling_and_a_role_s_own_setting_is_named(tmp_path):
    """[default] (the vllm preset's sampling, say) sets what no benchmark states; it no longer replaces PingPong's
    own sampling. A setting for the role itself does, and the run names it."""
    from rpbench.flows.kit.front.registry import models_config
    from rpbench.tasks.llm.names import resolve

    path = tmp_path / "models.toml"
    path.write_text('[default]\nmodel = "openai/gpt-4o-mini"\ntemperature = 0.0\ntop_p = 0.5\nmax_tokens = 300\n'
                    'max_concurrency = 3\n[roles.gpt4o]\nmodel = "openai/gpt-4o"\n'
                    '[roles.pingpong-judge]\ntemperature = 0.3\n', encoding="utf-8")
    config = models_config(str(path))
    player = config.for_role("player")
    assert (player.temperature, player.top_p, player.max_tokens) == (0.6, 0.9, 1536)
    assert player.max_concurrency == 3 and player.model == "openai/gpt-4o-mini"  # what no benchmark states
    assert config.overrides("player") == []
    judge = config.for_role("pingpong-judge")
    assert judge.temperature == 0.3 and judge.top_p == 0.95
    (field, release, sent, where), = config.overrides("pingpong-judge")
    assert (field, release, sent) == ("temperature", 0.1, 0.3) and "[roles.pingpong-judge]" in where
    # A role of the file named as the model under test: its model, PingPong's player settings under it.
    role = resolve(config, "gpt4o", ["player", "pingpong-judge"], like="player")
    bound = config.for_role(role)
    assert bound.model == "openai/gpt-4o" and (bound.temperature, bound.top_p, bound.max_tokens) == (0.6, 0.9, 1536)
    assert config.sources_of(role)["temperature"] == "mode pingpong"
