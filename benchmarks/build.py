"""Benchmark-builder throughput against the loopback server, measured in one run.

16 dialogues at a time, 200 ms latency per call, every dialogue 8 rounds. A
round is a director call, then either a scene reply or a test turn (source
and base at once, then the judge); the loopback director always names the test
character, so every round is a test turn: 3 sequential latencies. The bound is
16 dialogues per (8 x 3 + 1 grade) x 0.2 s.

Prints key=value lines; the headline figure (ratio of the bound) is last.
Usage: .venv/bin/python benchmarks/build.py
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
from rpbench.tasks.modes.furina.builder.build import build_benchmark  # noqa: E402
from rpbench.tasks.modes.furina.builder.simulate import BuildConfig  # noqa: E402
from tests.helpers import schema_responder  # noqa: E402
from tests.loopback import LoopbackServer  # noqa: E402
from tests.test_builder import SCENE, TEST  # noqa: E402

LATENCY, CONCURRENCY, ROUNDS, DIALOGUES = 0.2, 16, 8, 48


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


async def main() -> None:
    server = LoopbackServer(latency=LATENCY, responder=schema_responder).start()
    spec = ModelSpec(model="hosted_vllm/loopback", api_base=server.base_url, api_key_env="RPBENCH_BENCH_KEY",
                     max_concurrency=64, structured="json_schema", timeout=30,
                     input_cost_per_token=0.0, output_cost_per_token=0.0)
    gateway = Gateway(ModelsConfig(default=spec), cache=None)
    # tau is out of reach, so the run ends when every dialogue of the budget has been played.
    cfg = BuildConfig(tau=10_000, min_rounds=ROUNDS, max_rounds=ROUNDS, max_test_gap=1,
                      max_dialogues_per_character=DIALOGUES, wave_size=CONCURRENCY)
    start = time.perf_counter()
    result = await build_benchmark(gateway, [TEST], [SCENE], cfg)
    elapsed = time.perf_counter() - start
    await gateway.aclose()
    server.stop()
    calls = len(server.requests)
    dialogues = len({t.dialogue_id for t in result.turns})
    per_dialogue_s = (ROUNDS * 3 + 1) * LATENCY
    bound = CONCURRENCY / per_dialogue_s * 60
    rate = dialogues / elapsed * 60
    say("dialogues", dialogues)
    say("calls_per_dialogue", f"{calls / dialogues:.1f}")
    say("dialogues_per_minute", f"{rate:.1f}")
    say("bound_dialogues_per_minute", f"{bound:.1f}")
    say("build_c16_ratio_of_bound", f"{rate / bound:.3f}")


if __name__ == "__main__":
    asyncio.run(main())
