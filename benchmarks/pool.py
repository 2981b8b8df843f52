"""Pool building speed, measured in one run.

(a) static chunking throughput (ingest + headings + token counting), MB/s, on the
    shared sample books (../shared/books) or, without them, the project's samples;
(b) scene extraction of a many-chunk book against the loopback server at
    concurrency 16 (0.5 s latency per call), as a ratio of the bound
    (16 / 0.5 s = 32 calls/s).

Prints key=value lines; the headline figure is last.
Usage: .venv/bin/python benchmarks/pool.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rpbench.tasks.llm.config import ModelsConfig, ModelSpec  # noqa: E402
from rpbench.tasks.llm.gateway import Gateway  # noqa: E402
from rpbench.tasks.llm.local.tokens import tokenizer  # noqa: E402
from rpbench.tasks.modes.furina.pool.chunking import static_chunks  # noqa: E402
from rpbench.tasks.modes.furina.pool.extract import extraction_request  # noqa: E402
from rpbench.tasks.modes.furina.pool.ingest import read_book  # noqa: E402
from tests.loopback import LoopbackServer  # noqa: E402

SHARED = ROOT.parent / "shared" / "books"
LATENCY = 0.5
CONCURRENCY = 16


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


def chunking_throughput() -> tuple[list, float]:
    files = sorted(SHARED.glob("*.txt")) if SHARED.is_dir() else sorted((ROOT / "samples" / "books").glob("*.txt"))
    tokenizer()  # built once and cached; not part of the measurement
    total_bytes, books, spans_by_book = 0, [], []
    start = time.perf_counter()
    for path in files:
        total_bytes += path.stat().st_size
        book = read_book(path)
        spans = static_chunks(book.text, book.language)
        books.append(book)
        spans_by_book.append(spans)
    elapsed = time.perf_counter() - start
    for book, spans in zip(books, spans_by_book, strict=True):
        say(f"chunks_{book.title.replace(' ', '_')}", len(spans))
    return list(zip(books, spans_by_book, strict=True)), total_bytes / 1e6 / elapsed


async def extraction_rate(book, spans) -> tuple[float, int]:
    server = LoopbackServer(latency=LATENCY, responder=lambda body: json.dumps({"scenes": []})).start()
    spec = ModelSpec(model="aiohttp_openai/loopback", api_base=server.base_url, api_key_env="RPBENCH_BENCH_KEY",
                     max_concurrency=CONCURRENCY, structured="json_schema", timeout=30,
                     input_cost_per_token=0.0, output_cost_per_token=0.0)
    gateway = Gateway(ModelsConfig(default=spec), cache=None)
    requests = [extraction_request(book, i, book.text[s.start : s.end]) for i, s in enumerate(spans)]
    start = time.perf_counter()
    results = await gateway.run_all(requests)
    elapsed = time.perf_counter() - start
    await gateway.aclose()
    server.stop()
    assert all(r.ok for r in results)
    return len(requests) / elapsed, len(requests)


def main() -> None:
    books, mb_per_s = chunking_throughput()
    say("chunking_mb_per_s", f"{mb_per_s:.2f}")
    book, spans = max(books, key=lambda bs: len(bs[1]))
    rate, n = asyncio.run(extraction_rate(book, spans))
    say("extraction_chunks", n)
    say("extraction_calls_per_s", f"{rate:.2f}")
    say("extraction_c16_ratio_of_bound", f"{rate / (CONCURRENCY / LATENCY):.3f}")


if __name__ == "__main__":
    main()
