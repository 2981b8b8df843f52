"""Gateway throughput and overheads, measured in one run.

(a) calls/s through the gateway against the loopback server at 1 s latency,
    concurrency 1, 16, 64, each as a ratio of the bound (concurrency / latency);
(b) at 200 ms latency and concurrency 64, the gateway beside a bare aiohttp
    client on the same server, as a ratio (the bare client is the ceiling);
    (a) and (b) are measured twice: with calls sent from the gateway's own
    process (``processes = 1``, the default) and spread over worker processes
    (``processes = N`` in the model spec, N from --processes);
(c) overhead per call answered from the call cache, in ms;
(d) the embedded model's tokens/s through the gateway with 8 concurrent requests
    against one at a time (short prompts; benchmarks/local_model.py measures the
    engine itself, on the mixed workload and with several slots).

Prints key=value lines; the headline figure is last. The server runs in its own
process so it does not share the client's interpreter lock.
Usage: .venv/bin/python benchmarks/gateway.py [--skip-local] [--processes N (default: the cores)]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RPBENCH_TEST_API_KEY", "sk-bench")


from rpbench.tasks.llm import Request, load_models_config  # noqa: E402
from rpbench.tasks.llm.cache import CallCache  # noqa: E402
from rpbench.tasks.llm.config import ModelsConfig, ModelSpec  # noqa: E402
from rpbench.tasks.llm.gateway import Gateway  # noqa: E402
from tests.loopback import bare_client_rate, spawn  # noqa: E402


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


@contextmanager
def server_process(latency: float):
    proc, base_url = spawn(latency, cwd=str(ROOT))
    try:
        yield base_url
    finally:
        proc.terminate()
        proc.wait(10)


def loopback_models(base_url: str, concurrency: int, processes: int = 1) -> ModelsConfig:
    # aiohttp_openai/ is litellm's lightest route to an OpenAI-compatible server; a self-hosted server costs 0.
    spec = ModelSpec(model="aiohttp_openai/loopback", api_base=base_url, api_key_env="RPBENCH_TEST_API_KEY",
                     max_concurrency=concurrency, timeout=30, input_cost_per_token=0.0, output_cost_per_token=0.0,
                     processes=processes)
    return ModelsConfig(default=spec)


def requests(n: int, prefix: str) -> list[Request]:
    return [Request("bench", [{"role": "user", "content": f"{prefix} {i}"}]) for i in range(n)]


async def gateway_rate(base_url: str, concurrency: int, n: int, prefix: str, processes: int = 1) -> float:
    gateway = Gateway(loopback_models(base_url, concurrency, processes), cache=None)
    # Warm up: start the worker processes (if any) and open connections before timing.
    await gateway.run_all(requests(max(min(n, concurrency), 4 * processes), f"warm-{prefix}"), limit=concurrency)
    start = time.perf_counter()
    results = await gateway.run_all(requests(n, prefix), limit=concurrency)
    elapsed = time.perf_counter() - start
    await gateway.aclose()
    assert all(r.ok for r in results), [r.error for r in results if not r.ok][:3]
    return n / elapsed


async def cached_overhead_ms(base_url: str, n: int = 2000) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        cache = CallCache(Path(tmp) / "calls.sqlite")
        gateway = Gateway(loopback_models(base_url, 64), cache=cache)
        reqs = requests(n, "cached")
        await gateway.run_all(reqs, limit=64)
        start = time.perf_counter()
        for req in reqs:
            result = await gateway.complete(req.role, req.messages)
            assert result.cached
        elapsed = time.perf_counter() - start
        await gateway.aclose()
        return 1000 * elapsed / n


async def local_tokens_per_s(concurrent: bool, n: int = 8, max_tokens: int = 48) -> float:
    gateway = Gateway(load_models_config(environ={}), cache=None)
    gateway.config.default.max_tokens = max_tokens
    reqs = [
        Request("bench", [{"role": "user", "content": f"Tell a short story about a fox, number {i}."}])
        for i in range(n)
    ]
    await gateway.complete("bench", [{"role": "user", "content": "warm up"}])  # load the model first
    start = time.perf_counter()
    if concurrent:
        results = await gateway.run_all(reqs, limit=n)
    else:
        results = [await gateway.complete(r.role, r.messages) for r in reqs]
    elapsed = time.perf_counter() - start
    tokens = sum(r.completion_tokens for r in gateway.ledger.records()[-n:])
    await gateway.aclose()
    assert all(r.ok for r in results)
    return tokens / elapsed


async def main(skip_local: bool, processes: int) -> None:
    say("cpu_count", os.cpu_count())
    say("worker_processes", processes)
    variants = (("inprocess", 1), (f"processes{processes}", processes))
    with server_process(1.0) as url:
        for label, procs in variants:
            for c, n in ((1, 4), (16, 64), (64, 320)):
                rate = await gateway_rate(url, c, n, f"a{c}{label}", procs)
                say(f"latency1s_c{c}_{label}_calls_per_s", f"{rate:.2f}")
                say(f"latency1s_c{c}_{label}_ratio_of_bound", f"{rate / c:.3f}")
    with server_process(0.2) as url:
        bare = await bare_client_rate(url, 64, 1280, warm=64)
        say("latency200ms_c64_bare_aiohttp_calls_per_s", f"{bare:.1f}")
        say("latency200ms_c64_bare_ratio_of_bound", f"{bare / 320:.3f}")
        for label, procs in variants:
            gw = await gateway_rate(url, 64, 1280, f"b{label}", procs)
            say(f"latency200ms_c64_{label}_calls_per_s", f"{gw:.1f}")
            say(f"latency200ms_c64_{label}_ratio_of_bound", f"{gw / 320:.3f}")
            say(f"latency200ms_c64_{label}_vs_bare", f"{gw / bare:.3f}")
        say("cached_call_overhead_ms", f"{await cached_overhead_ms(url):.3f}")
    # Measured before the local model is loaded: torch's threads would compete for the CPU.
    with server_process(1.0) as url:
        headline = await gateway_rate(url, 64, 320, "headline", processes) / 64
    if not skip_local:
        single = await local_tokens_per_s(concurrent=False)
        batched = await local_tokens_per_s(concurrent=True)
        say("local_single_tokens_per_s", f"{single:.1f}")
        say("local_8_concurrent_tokens_per_s", f"{batched:.1f}")
        say("local_llamacpp_single_stream_reference_tokens_per_s", "124")
        say("local_8_concurrent_vs_single", f"{batched / single:.2f}")
    say(f"headline_latency1s_c64_processes{processes}_ratio_of_bound", f"{headline:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-local", action="store_true", help="skip the local-model measurement (slow)")
    # As many workers as cores: more than that only share the same cores with the parent and the server
    # (benchmarks/RESULTS.md holds what four workers and two reached on two cores).
    parser.add_argument("--processes", type=int, default=max(2, os.cpu_count() or 2),
                        help="worker processes for the spread-out variant (default: the machine's cores, at least 2)")
    args = parser.parse_args()
    # rpbench's CLI runs its flows on uvloop when it is installed; both clients here share that loop type.
    try:
        import uvloop

        say("event_loop", "uvloop")
        uvloop.run(main(args.skip_local, args.processes))
    except ImportError:
        say("event_loop", "asyncio")
        asyncio.run(main(args.skip_local, args.processes))
