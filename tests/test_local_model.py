"""The embedded local model, for real, on tiny inputs (slow: loads a 135M model once)."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from rpbench.tasks.llm import Gateway, Request, load_models_config
from rpbench.tasks.llm.local_engine import LocalEngine

pytestmark = pytest.mark.local_model


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


async def test_concurrent_requests_share_batches(gateway):
    engine = LocalEngine.for_model("smollm2-135m")
    before = engine.batches_run
    requests = [Request("scene", [{"role": "user", "content": f"Name a colour, number {i}."}]) for i in range(6)]
    results = await gateway.run_all(requests)
    assert all(r.ok for r in results)
    assert engine.batches_run - before < len(requests)  # at least two requests shared a forward pass


async def test_greedy_and_sampled_requests_share_a_batch_and_greedy_stays_greedy(gateway):
    engine = LocalEngine.for_model("smollm2-135m")
    from rpbench.tasks.llm.local_engine import GenRequest

    msg = [{"role": "user", "content": "Name one fruit."}]
    alone = engine.generate(msg, max_tokens=12, temperature=0.0, top_p=None, seed=0, schema=None)
    before = engine.batches_run
    futures = [engine.submit(GenRequest(msg, 12, t, None, 0, None)) for t in (0.0, 0.9, 0.0)]
    results = [f.result() for f in futures]
    assert engine.batches_run - before == 1  # one shared generate() call
    assert results[0].text == results[2].text == alone.text  # greedy rows unaffected by their sampled neighbour
