"""The local engines' contracts without loading a model: what llama.cpp is asked, and per-row sampling."""

from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import Path

import pytest
import torch

from rpbench.tasks.llm.local.generation import EngineMeter, GenRequest, GenResult
from rpbench.tasks.llm.local.hf import _PerRowSampler
from rpbench.tasks.llm.local.llamacpp import LlamaCppEngine, LocalModelError, strict
from rpbench.tasks.llm.local.models import EMBEDDED_SPEC, LocalModelSpec

SCHEMA = {"type": "object", "properties": {"reasoning": {"type": "string"}, "score": {"type": "integer"}},
          "required": ["reasoning", "score"]}


def _engine() -> LlamaCppEngine:
    return LlamaCppEngine("t", Path("unused.gguf"), LocalModelSpec())


def test_llamacpp_gets_exactly_the_sampling_the_models_file_sets():
    body = _engine()._body(GenRequest([{"role": "user", "content": "hi"}], 64, 0.7, None, 11, None, 1.2))
    # llama.cpp's own top-k and min-p would otherwise narrow every draw behind the user's back.
    assert body["top_k"] == 0 and body["min_p"] == 0.0 and body["top_p"] == 1.0
    assert (body["temperature"], body["seed"], body["max_tokens"], body["repeat_penalty"]) == (0.7, 11, 64, 1.2)
    assert body["cache_prompt"] is False and "grammar" not in body  # by default every prompt is read afresh
    plain = _engine()._body(GenRequest([{"role": "user", "content": "hi"}], 8, 0.0, 0.9, None, None))
    assert plain["top_p"] == 0.9 and "seed" not in plain and "repeat_penalty" not in plain
    reusing = LlamaCppEngine("t", Path("unused.gguf"), LocalModelSpec(reuse_prefixes=True))
    assert reusing._body(GenRequest([{"role": "user", "content": "hi"}], 8, 0.0, None, 0, None))["cache_prompt"] is True


def test_a_schema_becomes_a_compact_llguidance_grammar_in_the_schemas_property_order():
    body = _engine()._body(GenRequest([{"role": "user", "content": "hi"}], 64, 0.0, None, 0, SCHEMA))
    grammar = body["grammar"]
    assert grammar.startswith("%llguidance")
    embedded = json.loads(grammar.split("%json", 1)[1])
    assert embedded["x-guidance"] == {"whitespace_flexible": False}
    assert list(embedded["properties"]) == ["reasoning", "score"]  # not sorted: reasoning comes first
    assert embedded["additionalProperties"] is False  # no invented keys beside the schema's own


def test_strict_mode_closes_every_object_but_keeps_what_a_schema_says_itself():
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}},
                                               "c": {"type": "object", "properties": {}, "additionalProperties": True}},
              "$defs": {"D": {"type": "object", "properties": {"e": {"type": "integer"}}}}}
    closed = strict(schema)
    assert closed["additionalProperties"] is False and closed["properties"]["a"]["additionalProperties"] is False
    assert closed["properties"]["c"]["additionalProperties"] is True
    assert closed["$defs"]["D"]["additionalProperties"] is False
    assert "additionalProperties" not in schema  # the caller's schema is left as it was


def test_an_error_from_llamacpp_fails_the_request_with_its_message():
    engine = _engine()

    class Refusing:
        def handle_chat_completions(self, body):
            return {"error": {"code": 400, "message": "request (9000 tokens) exceeds the available context size"}}

    engine._server = Refusing()
    future = engine.submit(GenRequest([{"role": "user", "content": "hi"}], 8, 0.0, None, 0, None))
    with pytest.raises(LocalModelError, match="exceeds the available context size"):
        future.result()
    assert engine.meter.in_flight == 0 and engine.meter.requests_done == 0


def test_a_model_that_fails_to_load_fails_every_request_naming_it(tmp_path):
    engine = LlamaCppEngine("broken", tmp_path / "missing.gguf", LocalModelSpec())

    def boom():
        raise ValueError("not a GGUF file")

    engine._load = boom  # type: ignore[method-assign]
    for _ in range(2):
        with pytest.raises(LocalModelError, match="local model broken failed to load: not a GGUF file"):
            engine.submit(GenRequest([{"role": "user", "content": "x"}], 8, 0.0, None, 0, None)).result()


def test_the_embedded_model_is_requantized_for_speed_by_default():
    assert EMBEDDED_SPEC.requantize == "q4_0" and EMBEDDED_SPEC.parallel == 1


def test_the_meter_counts_tokens_and_requests_in_flight():
    meter = EngineMeter()
    ok, failed = meter.track(Future()), meter.track(Future())
    assert meter.in_flight == 2 and meter.tokens_per_s() == 0.0
    ok.set_result(GenResult("a", 10, 30, "stop"))
    failed.set_exception(RuntimeError("boom"))  # a failed request leaves the totals alone
    assert (meter.in_flight, meter.requests_done, meter.completion_tokens, meter.prompt_tokens) == (0, 1, 30, 10)


def _draws(batch: list[GenRequest], scores: torch.Tensor, steps: int = 5) -> list[list[int]]:
    sampler = _PerRowSampler(batch, "cpu")
    out: list[list[int]] = [[] for _ in batch]
    for _ in range(steps):
        picked = sampler(None, scores.clone())
        for i, row in enumerate(picked):
            out[i].append(int(torch.argmax(row)))
    return out


def test_a_rows_draws_depend_on_its_own_seed_not_on_its_batch_neighbours():
    torch.manual_seed(0)
    logits = torch.randn(3, 50)
    mine = GenRequest([], 8, 0.9, None, 7, None)
    alone = _draws([mine], logits[:1])
    beside_others = _draws([GenRequest([], 8, 0.9, None, 1, None), GenRequest([], 8, 0.0, None, 0, None), mine],
                           torch.stack([logits[1], logits[2], logits[0]]))
    assert beside_others[2] == alone[0]
    assert beside_others[1] == [int(torch.argmax(logits[2]))] * 5  # the greedy neighbour stays greedy
    other_seed = _draws([GenRequest([], 8, 0.9, None, 8, None)], logits[:1], steps=20)
    assert other_seed[0] != _draws([mine], logits[:1], steps=20)[0]


def test_top_p_keeps_only_the_most_likely_tokens():
    logits = torch.linspace(1.0, 0.1, 10).unsqueeze(0)  # ten nearly equally likely tokens, best first
    nucleus = _draws([GenRequest([], 8, 1.0, 0.25, 3, None)], logits, steps=40)[0]
    everything = _draws([GenRequest([], 8, 1.0, None, 3, None)], logits, steps=40)[0]
    assert set(nucleus) <= {0, 1, 2} and len(set(nucleus)) >= 2
    assert set(everything) - {0, 1, 2}  # without top-p the tail is drawn too


def test_a_gguf_runs_on_transformers_when_cuda_is_here_but_llamacpp_is_the_cpu_build(tmp_path, monkeypatch):
    from rpbench.tasks.llm.local import engines
    from rpbench.tasks.llm.local.hf import TransformersEngine
    from rpbench.tasks.llm.local.models import register_local_models

    (tmp_path / "gpu.gguf").write_bytes(b"GGUF")
    register_local_models({"on-gpu": LocalModelSpec(path=str(tmp_path / "gpu.gguf")),
                           "on-cpu": LocalModelSpec(path=str(tmp_path / "gpu.gguf"))})
    monkeypatch.setattr(engines, "_cuda_without_llamacpp_gpu", lambda: True)
    assert isinstance(engines.Engines.for_model("on-gpu"), TransformersEngine)
    monkeypatch.setattr(engines, "_cuda_without_llamacpp_gpu", lambda: False)
    assert isinstance(engines.Engines.for_model("on-cpu"), LlamaCppEngine)


def test_two_processes_making_one_cache_entry_make_it_once(tmp_path):
    """Two test workers (or commands) converting the embedded model for training at once: the second waits
    and finds the folder made. Both making it, the second's swap pulled the first's folder from under it."""
    import subprocess
    import sys
    import textwrap

    entry, log = tmp_path / "cache" / "model.hf", tmp_path / "made.log"
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from rpbench.tasks.core.paths import one_writer
        entry = Path({str(entry)!r})
        with one_writer(entry):
            if not (entry / "config.json").is_file():
                with open({str(log)!r}, "a") as made:
                    made.write("made\\n")
                time.sleep(0.5)  # a conversion under way: the other process must not start one
                entry.mkdir()
                (entry / "config.json").write_text("{{}}")
        assert (entry / "config.json").is_file()
    """)
    runs = [subprocess.Popen([sys.executable, "-c", script]) for _ in range(2)]
    assert [r.wait(120) for r in runs] == [0, 0]
    assert log.read_text().splitlines() == ["made"]
