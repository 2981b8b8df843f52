"""Names resolve or fail (roles, model strings, local models), and local models are picked by name."""

from __future__ import annotations

import pytest

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm import load_models_config
from rpbench.tasks.llm.config import LOCAL_MODEL, Role
from rpbench.tasks.llm.names import resolve, resolve_all

BUILTIN = ("judge", "checker", "test", "source")
# A mode's role: its own settings on a real model, and the embedded model's tuning for it.
TEST = {"test": ("furina", Role("the model under test", {"max_tokens": 512, "temperature": 0.3},
                                {"max_tokens": 64}))}


def test_a_builtin_role_resolves_to_itself_and_a_role_of_the_file_stands_in_for_the_benchmark_s():
    config = load_models_config(environ={}, roles=TEST)
    assert resolve(config, "checker", BUILTIN, like="test") == "checker"  # built in, left out of the file
    declared = load_models_config(environ={}, roles={**TEST, "checker": ("furina", Role("checks a scene"))})
    assert declared.for_role("checker").model == declared.default.model  # declared, bound by no file: [default]
    # A role of the file named as a model under test: its model, at the benchmark's role's settings (``like``),
    # under what the file sets for it.
    role = resolve(config, "local-greedy", BUILTIN, like="test")  # in the default file
    assert role == "test@role:local-greedy"
    spec, mine = config.for_role(role), config.for_role("local-greedy")
    assert spec.model == mine.model and spec.temperature == mine.temperature  # the file's own temperature
    assert config.sources_of(role)["temperature"].endswith("[roles.local-greedy]")


@pytest.mark.parametrize("name", ["openai/gpt-4o", "hosted_vllm/Qwen2.5-7B", "ollama_chat/llama3.1", "gpt-4o-mini"])
def test_a_model_string_gets_the_roles_settings_for_a_real_model_never_the_embedded_models_tuning(name):
    config = load_models_config(environ={}, roles=TEST)
    role = resolve(config, name, BUILTIN, like="test")
    assert role == f"test@{name}"
    spec = config.for_role(role)
    assert spec.model == name and spec.max_tokens == 512 and spec.temperature == 0.3
    assert spec.extra == {} and spec.reasoning_chars is None  # no repetition penalty, no reasoning cap
    assert config.sources_of(role)["max_tokens"] == "mode furina"
    assert "repetition_penalty" not in spec.sampling()


def test_the_embedded_model_gets_its_tuning_under_the_role():
    config = load_models_config(environ={}, roles=TEST)
    spec = config.for_role(resolve(config, "local/smollm2-135m", BUILTIN, like="test"))
    assert spec.max_tokens == 64 and spec.temperature == 0.3 and spec.extra == {"repetition_penalty": 1.2}
    assert config.for_role("test") == spec  # the built-in file binds it to the embedded model already


@pytest.mark.parametrize(("name", "message"), [
    ("local-greedyy", "unknown model 'local-greedyy' (did you mean 'local-greedy'? known: checker, judge, local-greedy, local-sampled"),
    ("opnai/gpt-4o", "unknown model 'opnai/gpt-4o'"),
    ("local/smollm3", "unknown local model 'smollm3' (known: smollm2-135m)"),
])
def test_a_name_that_resolves_to_nothing_is_an_error_listing_what_exists(name, message):
    config = load_models_config(environ={})
    with pytest.raises(InputError) as err:
        resolve_all(config, [name], BUILTIN, like="test", option="--model")
    assert str(err.value).startswith("--model: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_a_models_file_may_name_local_models_and_must_name_only_those(tmp_path):
    weights = tmp_path / "tiny.gguf"
    weights.write_bytes(b"GGUF")
    good = tmp_path / "models.toml"
    good.write_text(f'[local_models.tiny]\npath = "{weights}"\n[roles.judge]\nmodel = "local/tiny"\n')
    config = load_models_config(good, environ={})
    assert config.for_role("judge").model == "local/tiny"
    assert resolve(config, "local/tiny", BUILTIN, like="test") == "test@local/tiny"
    bad = tmp_path / "bad.toml"
    bad.write_text('[roles.judge]\nmodel = "local/tiny"\n')
    with pytest.raises(InputError, match=r"bad.toml: roles.judge: unknown local model 'tiny' \(known: smollm2-135m\)"):
        load_models_config(bad, environ={})


def test_local_engines_are_picked_by_weights_and_cached_by_name(tmp_path, monkeypatch):
    """A GGUF file runs on llama.cpp, a model folder on transformers; one engine per name; unknown names fail."""
    from rpbench.tasks.llm.local.engines import Engines
    from rpbench.tasks.llm.local.generation import GenRequest, GenResult
    from rpbench.tasks.llm.local.hf import TransformersEngine
    from rpbench.tasks.llm.local.llamacpp import LlamaCppEngine
    from rpbench.tasks.llm.local.models import LocalModelSpec, register_local_models

    loaded: list[str] = []

    class FakeServer:  # stands in for xllamacpp.Server: answers like llama.cpp's chat endpoint
        def __init__(self, name):
            self.name = name

        def handle_chat_completions(self, body):
            return {"choices": [{"finish_reason": "stop", "message": {"content": f" {self.name} says hi "}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 2}}}

    def fake_llamacpp_load(self):
        loaded.append(self.name)
        return FakeServer(self.name)

    monkeypatch.setattr(LlamaCppEngine, "_load", fake_llamacpp_load)
    monkeypatch.setattr(TransformersEngine, "_load", lambda self: loaded.append(self.name))
    monkeypatch.setattr(TransformersEngine, "_generate_batch",
                        lambda self, batch: [GenResult(f"{self.name} says hi", 1, 3, "stop") for _ in batch])
    (tmp_path / "alpha.gguf").write_bytes(b"GGUF")
    (tmp_path / "beta").mkdir()
    register_local_models({"alpha": LocalModelSpec(path=str(tmp_path / "alpha.gguf")),
                           "beta": LocalModelSpec(path=str(tmp_path / "beta"))})
    alpha, beta = Engines.for_model("alpha"), Engines.for_model("beta")
    assert isinstance(alpha, LlamaCppEngine) and isinstance(beta, TransformersEngine)
    assert Engines.for_model("alpha") is alpha and Engines.for_model("beta") is beta

    def ask(engine):
        return engine.submit(GenRequest([{"role": "user", "content": "x"}], 8, 0.0, None, 0, None)).result()

    first = ask(alpha)
    assert (first.text, first.completion_tokens, first.cached_tokens) == ("alpha says hi", 3, 2)
    assert ask(beta).text == "beta says hi"
    assert sorted(loaded) == ["alpha", "beta"]
    assert alpha.meter.requests_done == 1 and alpha.meter.completion_tokens == 3 and alpha.meter.in_flight == 0
    with pytest.raises(KeyError, match="unknown local model 'gamma'"):
        Engines.for_model("gamma")
    assert LOCAL_MODEL == "local/smollm2-135m"


@pytest.mark.parametrize(("text", "message"), [
    ('[default]\nmax_token = 5\n', "field 'default.max_token': did you mean 'max_tokens'? not a setting of a role"),
    ('[roles.judge]\ntemprature = 0.5\n', "field 'roles.judge.temprature': did you mean 'temperature'?"),
    ('[defualt]\nmodel = "openai/gpt-4o"\n', "field 'defualt': did you mean 'default'? not a section of a models "
                                               "file (the sections: default, roles, retry, local_models)"),
    ('[default]\nbatch_size = 5\n', "field 'default.batch_size': not a setting of a role"),
])
def test_a_typo_in_a_models_file_names_the_setting_it_was_likely_meant_to_be(tmp_path, text, message):
    path = tmp_path / "models.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_models_config(path, environ={})
    assert message in str(caught.value)
    assert "did you mean" not in str(caught.value) or "batch_size" not in text  # no far-fetched guess


def test_a_role_nothing_declares_is_an_error_listing_the_roles_never_the_default():
    """A stage asking for a role no mode declares and no models file binds (a name the code made up) gets an
    error naming the roles there are, not [default]'s model in silence."""
    config = load_models_config(environ={}, roles=TEST)
    with pytest.raises(InputError) as err:
        config.for_role("tset")
    assert str(err.value).startswith("unknown role 'tset' (did you mean 'test'? known: ")
    assert "local-greedy" in str(err.value) and "\n" not in str(err.value)
