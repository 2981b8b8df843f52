"""CPU a call costs on each litellm route, against a bare aiohttp client, measured in one run.

CALLS calls at CONCURRENCY in flight to the loopback server (its own process, LATENCY s a reply), sent from
this process: by a bare aiohttp client, by litellm's OpenAI route (``openai/``, through OpenAI's SDK) and by
its route for a vLLM server (``hosted_vllm/``), with rpbench's litellm tuning (``tune_litellm``). Printed
per route: milliseconds of this process's CPU a call (user + system) and calls/s; then each litellm route's
CPU as a multiple of the bare client's. The headline, last: the OpenAI route's CPU over the vLLM route's.
Usage: .venv/bin/python benchmarks/litellm_routes.py [--calls 3000] [--concurrency 64] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KEY_ENV = "RPBENCH_ROUTES_KEY"
WARM_UP = 200  # calls sent before measuring: connections open, litellm's first-call setup done


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(route: str, base_url: str, calls: int, concurrency: int) -> tuple[float, float]:
    """(ms of CPU a call, calls/s) for ``calls`` calls on ``route`` (``bare`` for plain aiohttp)."""
    import orjson

    from rpbench.tasks.llm.litellm_call import add_transport, new_session, send

    session = new_session()
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> Any:
        messages = [{"role": "system", "content": "You are a character in a story. " * 20},
                    {"role": "user", "content": f"Question {i}: what do you do next? " * 10}]
        async with gate:
            if route == "bare":
                async with session.post(f"{base_url}/chat/completions",
                                        data=orjson.dumps({"model": "m", "messages": messages}),
                                        headers={"Content-Type": "application/json"}) as reply:
                    return orjson.loads(await reply.read())["choices"][0]["message"]["content"]
            kwargs = {"model": f"{route}/m", "messages": messages, "api_base": base_url, "timeout": 60,
                      "num_retries": 0, "drop_params": True, "temperature": 0.0}
            return await send(add_transport(kwargs, KEY_ENV, session))

    try:
        await asyncio.gather(*(one(i) for i in range(WARM_UP)))
        cpu0, wall0 = cpu_s(), time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        cpu, wall = cpu_s() - cpu0, time.perf_counter() - wall0
    finally:
        await session.close()
    return 1000 * cpu / calls, calls / wall


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args(argv)
    os.environ[KEY_ENV] = "sk-routes"
    from tests.loopback import spawn

    server, base_url = spawn(args.latency, any_mode=True, cwd=str(ROOT))
    try:
        from rpbench.tasks.llm.litellm_call import tune_litellm

        tune_litellm()
        say("calls", args.calls)
        say("concurrency", args.concurrency)
        say("loopback_latency_s", args.latency)
        cpu: dict[str, float] = {}
        for route in ("bare", "openai", "hosted_vllm"):
            cpu[route], rate = asyncio.run(measure(route, base_url, args.calls, args.concurrency))
            say(f"{route}_cpu_ms_per_call", f"{cpu[route]:.2f}")
            say(f"{route}_calls_per_s", f"{rate:.0f}")
        for route in ("openai", "hosted_vllm"):
            say(f"{route}_cpu_over_bare", f"{cpu[route] / cpu['bare']:.1f}")
        say("openai_cpu_over_hosted_vllm", f"{cpu['openai'] / cpu['hosted_vllm']:.2f}")
        return cpu
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
