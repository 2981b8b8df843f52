"""Prompt tokens the provider read from its cache are recorded and priced at the cached price; a calls table
written before that column existed still reads (the column unknown, not an error)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from rpbench.storage.schemas import CALLS
from rpbench.storage.tables import META_VERSION, read_records, write_records
from rpbench.tasks.core.records import CallRecord

PRICES = {"input_cost_per_token": 0.000004, "output_cost_per_token": 0.000016,
          "cached_input_cost_per_token": 0.000001}


async def test_cached_prompt_tokens_are_counted_and_priced_as_cached(make_gateway, loopback):
    loopback.cached_tokens = 8  # of the 10 prompt tokens the loopback server reports for every request
    gateway = make_gateway(**PRICES)
    reply = await gateway.complete("judge", [{"role": "user", "content": "hello"}])
    assert reply.ok
    (record,) = gateway.ledger.records()
    assert (record.prompt_tokens, record.cached_prompt_tokens) == (10, 8)
    assert record.cost_usd == pytest.approx(2 * 0.000004 + 8 * 0.000001 + record.completion_tokens * 0.000016)
    assert gateway.ledger.totals()["cached_prompt_tokens"] == 8


async def test_without_a_cached_price_cached_tokens_cost_the_full_input_price(make_gateway, loopback):
    loopback.cached_tokens = 8
    gateway = make_gateway(model="openai/no-such-model-priced-here", input_cost_per_token=0.000004,
                           output_cost_per_token=0.000016)
    await gateway.complete("judge", [{"role": "user", "content": "hello"}])
    (record,) = gateway.ledger.records()
    assert record.cost_usd == pytest.approx(10 * 0.000004 + record.completion_tokens * 0.000016)


def test_a_calls_table_from_before_the_cached_column_still_reads(tmp_path):
    path = tmp_path / "calls.parquet"
    record = CallRecord(call_id="c1", cache_key="k", role="judge", model="m", tag=None, attempt=0, cached=False,
                        outcome="ok", prompt_tokens=5)
    write_records(path, [record], CALLS)
    old = pq.read_table(path)
    meta = {**old.schema.metadata, META_VERSION: b"2"} if META_VERSION in old.schema.metadata else None
    assert meta is not None, f"the table's version key is not where this test looks: {old.schema.metadata}"
    older = old.drop_columns(["cached_prompt_tokens"]).replace_schema_metadata(meta)
    pq.write_table(older, path)
    (back,) = read_records(path, CALLS)
    assert back.cached_prompt_tokens is None and back.prompt_tokens == 5
    # A table of this version without the column is damaged, and says so.
    pq.write_table(old.drop_columns(["cached_prompt_tokens"]), path)
    with pytest.raises(Exception, match="lacks column 'cached_prompt_tokens'"):
        read_records(path, CALLS)
