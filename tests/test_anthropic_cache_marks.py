"""Anthropic caches a prompt only up to a block marked cache_control: the gateway marks a judgment's prefix
shared with the stage's earlier prompts, and a dialogue's system message and last turn; tokens read from and
written to the cache are priced as Anthropic bills them. Sent to the loopback server's Messages API route."""

from __future__ import annotations

import asyncio

import pytest

from rpbench.tasks.llm.config import ModelsConfig, ModelSpec, RetryPolicy
from rpbench.tasks.llm.gateway import Gateway
from rpbench.tasks.llm.prompt_cache import MIN_PREFIX_CHARS
from tests.helpers import TEST_KEY_ENV

PRICES = {"input_cost_per_token": 0.000003, "output_cost_per_token": 0.000015,
          "cached_input_cost_per_token": 0.0000003, "cache_write_cost_per_token": 0.00000375}


@pytest.fixture
def gateway(loopback, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "sk-ant-test-0000000000000000000")
    spec = ModelSpec(model="anthropic/claude-3-5-haiku-20241022", api_base=loopback.base_url.removesuffix("/v1"),
                     api_key_env=TEST_KEY_ENV, timeout=5, **PRICES)
    made = Gateway(ModelsConfig(default=spec, retry=RetryPolicy(transient_attempts=1, parse_attempts=1)))
    made.stage = "eval-judgments"
    return made


def _blocks(body: dict) -> list[dict]:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, list) else [{"text": content}]


def test_judgments_sharing_a_long_prefix_mark_it_and_the_text_is_unchanged(gateway, loopback):
    scene = "".join(f"Line {k} of the scene, the profiles and the rubric.\n" for k in range(150))
    assert len(scene) > MIN_PREFIX_CHARS
    prompts = [f"{scene}Reply A: {a}\nReply B: {b}\nWhich is better?" for a, b in (("yes", "no"), ("no", "yes"))]
    short = "A short question with nothing to cache."
    for text in [*prompts, short]:
        assert asyncio.run(gateway.complete("judge", [{"role": "user", "content": text}])).ok
    first, second, third = loopback.requests
    assert all("cache_control" not in b for b in _blocks(first))  # nothing earlier shares its prefix
    marked = _blocks(second)
    assert marked[0]["cache_control"] == {"type": "ephemeral"} and marked[0]["text"] == scene
    assert "".join(b["text"] for b in marked) == prompts[1]  # the model reads the same text
    assert all("cache_control" not in b for b in _blocks(third))


def test_a_dialogue_marks_its_system_message_and_its_last_turn(gateway, loopback):
    messages = [{"role": "system", "content": "You are Mirela Voss, captain of the Gull."},
                {"role": "user", "content": "Where are we bound?"}, {"role": "assistant", "content": "North."},
                {"role": "user", "content": "Why north?"}]
    assert asyncio.run(gateway.complete("player", messages)).ok
    (body,) = loopback.requests
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert _blocks(body)[-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in str(body["messages"][0])  # earlier turns are inside the cached prefix


def test_tokens_read_from_and_written_to_the_cache_are_priced_as_billed(gateway, loopback):
    loopback.cached_tokens = 7  # the loopback reports 10 fresh input tokens, 7 read, 5 written on a marked request
    messages = [{"role": "system", "content": "You are Mirela."}, {"role": "user", "content": "Hello?"}]
    asyncio.run(gateway.complete("player", messages))
    (record,) = gateway.ledger.records()
    assert (record.prompt_tokens, record.cached_prompt_tokens) == (22, 7)
    expected = (10 * PRICES["input_cost_per_token"] + 7 * PRICES["cached_input_cost_per_token"]
                + 5 * PRICES["cache_write_cost_per_token"] + record.completion_tokens * PRICES["output_cost_per_token"])
    assert record.cost_usd == pytest.approx(expected)
