"""Evaluation throughput against the loopback server, measured in one run.

200 items, two models under test, every endpoint bounded at 16 requests in
flight with 200 ms latency, so at most 80 calls/s. Reports items judged per
minute (an item judged = both orders for one model), its ratio of the bound,
and calls and tokens per item.

Prints key=value lines; the headline figure (ratio of the bound) is last.
Usage: .venv/bin/python benchmarks/eval.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RPBENCH_BENCH_KEY", "sk-bench")

from rpbench.tasks.llm.config import ModelsConfig, ModelSpec  # noqa: E402
from rpbench.tasks.llm.gateway import Gateway  # noqa: E402
from rpbench.tasks.modes.furina.domain import Item  # noqa: E402
from rpbench.tasks.modes.furina.evaluation.run import Bench, EvalConfig, evaluate  # noqa: E402
from tests.helpers import schema_responder  # noqa: E402
from tests.loopback import LoopbackServer  # noqa: E402
from tests.test_builder import SCENE, TEST  # noqa: E402

LATENCY, CONCURRENCY, N_ITEMS = 0.2, 16, 200
MODELS = {"model-a": "test-a", "model-b": "test-b"}


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


async def main() -> None:
    server = LoopbackServer(latency=LATENCY, responder=schema_responder).start()
    spec = ModelSpec(model="hosted_vllm/loopback", api_base=server.base_url, api_key_env="RPBENCH_BENCH_KEY",
                     max_concurrency=CONCURRENCY, structured="json_schema", timeout=30,
                     input_cost_per_token=0.0, output_cost_per_token=0.0)
    config = ModelsConfig(default=spec)
    for k, role in enumerate(MODELS.values()):
        config.roles[role] = spec.model_copy(update={"temperature": 0.1 * (k + 1)})
    gateway = Gateway(config, cache=None)
    dims = ["CR", "FR", "RR", "CA", "PA"]
    items = [Item(item_id=f"i{k}", character=TEST.name, character_type=TEST.type, language="en",
                  scene_id=SCENE.scene_id, dialogue_id="d0", dimension=dims[k % 5],
                  history=[{"speaker": "Starbuck", "text": f"Question number {k}?"}], test_utterance="t",
                  base_utterance="b", source_model="m", sigma=1) for k in range(N_ITEMS)]
    start = time.perf_counter()
    tables = await evaluate(gateway, Bench(items, {TEST.name: TEST}, {SCENE.scene_id: SCENE}), MODELS, EvalConfig())
    elapsed = time.perf_counter() - start
    await gateway.aclose()
    server.stop()
    calls = len(server.requests)
    judged = len(tables.item_scores)
    records = gateway.ledger.records()
    tokens = sum((r.prompt_tokens or 0) + (r.completion_tokens or 0) for r in records)
    bound_calls_per_s = CONCURRENCY / LATENCY
    say("items", N_ITEMS)
    say("models", len(MODELS))
    say("calls", calls)
    say("calls_per_item_and_model", f"{calls / judged:.2f}")
    say("tokens_per_item_and_model", f"{tokens / judged:.0f}")
    say("items_judged_per_minute", f"{judged / elapsed * 60:.1f}")
    say("eval_c16_ratio_of_bound", f"{calls / elapsed / bound_calls_per_s:.3f}")


if __name__ == "__main__":
    asyncio.run(main())
