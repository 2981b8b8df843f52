"""The embedded local model, for real, on tiny inputs (slow: loads a 135M model once)."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from rpbench.tasks.llm import load_models_config
from rpbench.tasks.llm.gateway import Gateway
from rpbench.tasks.llm.local.generation import GenRequest
from rpbench.tasks.llm.local.llamacpp import LlamaCppEngine
from rpbench.tasks.llm.local.models import EMBEDDED_SPEC, find_embedded_gguf

# The module's tests share module-scoped fixtures (a server, a trained adapter, a work folder): one worker
# runs them all, so the fixtures are made once.
pytestmark = [pytest.mark.local_model, pytest.mark.xdist_group("local-model")]


class Rating(BaseModel):
    reason: str = Field(max_length=120)
    score: Literal[1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def gateway():
    return Gateway(load_models_config(environ={}), cache=None)


async def test_local_model_answers_a_real_prompt(gateway):
    result = await gateway.complete("scene", [{"role": "user", "content": "Say hello to Alice in one sentence."}])
    assert result.ok and len(result.text.split()) >= 2
    (record,) = gateway.ledger.records()[-1:]
    assert record.completion_tokens > 0 and record.prompt_tokens > 0 and record.cost_usd == 0.0


async def test_local_model_returns_a_valid_structured_object(gateway):
    msg = [{"role": "user", "content": "How polite is the line 'Get lost!'? Give a reason and a score from 1 to 5."}]
    result = await gateway.complete("judge", msg, schema=Rating)
    assert result.ok, result.raw_replies
    assert isinstance(result.parsed, Rating) and result.parsed.score in {1, 2, 3, 4, 5}
    assert result.attempts == 1  # constrained decoding makes the first reply valid


def _engine(name: str, parallel: int, reuse_prefixes: bool | None = None) -> LlamaCppEngine:
    update = {"parallel": parallel, "context": 1024}
    spec = EMBEDDED_SPEC.model_copy(update=update if reuse_prefixes is None else {**update,
                                                                                    "reuse_prefixes": reuse_prefixes})
    return LlamaCppEngine(name, find_embedded_gguf(), spec)


def _ask(engine: LlamaCppEngine, prompt: str, temperature: float = 0.0, seed: int = 0, schema=None,
         system: str | None = None, max_tokens: int = 24) -> GenRequest:
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    return GenRequest(messages, max_tokens, temperature, None, seed, schema, 1.2)


def test_with_several_slots_requests_are_decoded_together():
    """Continuous batching: llama.cpp's own counters show more tokens predicted than decode steps."""
    batched, single = _engine("batched", 4), _engine("single", 1)
    for engine in (batched, single):
        futures = [engine.submit(_ask(engine, f"Count slowly from {i} to {i + 20}.")) for i in range(4)]
        assert all(f.result().completion_tokens > 0 for f in futures)
    together, alone = batched.metrics(), single.metrics()
    assert together["tokens_predicted_total"] > together["n_decode_total"]  # several rows in one step
    assert alone["tokens_predicted_total"] <= alone["n_decode_total"]  # one row per step


def test_the_embedded_models_replies_do_not_depend_on_concurrency_or_order():
    """As the embedded model runs by default (one slot, every prompt read afresh): the same requests one by one,
    and all at once in reverse order, get the same replies."""
    engine = _engine("one-slot", 1)
    rating = Rating.model_json_schema()
    card = "You are Maren Holt, keeper of the ledger on the island. You speak briefly and plainly. " * 4
    asks = [("Name a fruit.", 0.0, 0, None), ("Name a fruit.", 0.9, 1, None), ("Name a fruit.", 0.9, 2, None),
            ("Describe the sea.", 0.8, 5, None), ("Rate 'Get lost!' for politeness.", 0.0, 0, rating),
            ("Rate 'Thank you kindly.' for politeness.", 0.7, 3, rating)]
    one_by_one = [engine.submit(_ask(engine, p, t, s, sc, system=card)).result().text for p, t, s, sc in asks]
    futures = [engine.submit(_ask(engine, p, t, s, sc, system=card)) for p, t, s, sc in reversed(asks)]
    all_at_once = [f.result().text for f in reversed(futures)]
    assert all_at_once == one_by_one
    assert one_by_one[1] != one_by_one[2] or one_by_one[0] != one_by_one[1]  # seeds matter: not all one reply


def test_a_prompt_prefix_already_read_is_reused():
    engine = _engine("prefix", 1, reuse_prefixes=True)
    card = "You are Captain Varga, keeper of the north light. " * 20  # ~200 tokens shared by both calls
    first = engine.submit(_ask(engine, "Who are you?", system=card)).result()
    second = engine.submit(_ask(engine, "What do you keep?", system=card)).result()
    assert first.cached_tokens < 50 and second.cached_tokens >= 180


def test_transformers_engine_samples_each_row_by_its_own_seed():
    """The engine for model folders: a sampled row's reply is the same alone and beside other rows."""
    from rpbench.tasks.llm.local.hf import TransformersEngine

    engine = TransformersEngine("transformers-check", find_embedded_gguf())
    msg = [{"role": "user", "content": "Name one fruit."}]
    alone = engine.generate(msg, max_tokens=12, temperature=0.9, top_p=None, seed=4, schema=None)
    before = engine.batches_run
    futures = [engine.submit(GenRequest(msg, 12, t, None, seed, None)) for t, seed in ((0.0, 0), (0.9, 4), (0.9, 9))]
    together = [f.result() for f in futures]
    assert engine.batches_run - before == 1  # the three rows shared one generate() call
    assert together[1].text == alone.text
    rated = engine.generate([{"role": "user", "content": "Rate 'Get lost!' for politeness."}], max_tokens=60,
                            temperature=0.0, top_p=None, seed=0, schema=Rating.model_json_schema())
    assert Rating.model_validate_json(rated.text).score in {1, 2, 3, 4, 5}
