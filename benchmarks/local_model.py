"""The embedded model's throughput: llama.cpp (the engine rpbench uses) against transformers, in one run.

Workload, the same for every engine: requests with prompts of 200 to 1,500
tokens and reply budgets of 64 to 256 tokens, a third of them constrained to
a JSON schema (a judge-like reasoning and score), sampled at temperature 0.7
with one seed per request. Like rpbench's own calls, a prompt is a system part
(one of four character cards with instructions) followed by a part of its own
(an excerpt of a sample book), so prompts share prefixes the way a stage's
calls do; ``--unique`` makes every prompt unique from its first token instead.

Measured: aggregate reply tokens per second (and prompt plus reply tokens
per second) with 1, 8 and 32 requests in flight, on llama.cpp with one slot
(rpbench's default for the embedded model: requests queue, prompt prefixes are
reused from its prompt cache) and with 8 slots (continuous batching); the same
for decode-bound requests (one-line prompts, 128-token budgets, like the 124
tokens/s llama.cpp reference); and the single-stream transformers engine (the
GGUF de-quantized to float32, one request at a time) as the baseline.
llama.cpp's single stream is the one-slot, 1-in-flight figure. The headline,
printed last, is the default engine's 8-in-flight reply tokens/s on the mixed
workload.

Usage: .venv/bin/python benchmarks/local_model.py [--unique] [--requests N] [--skip-transformers]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rpbench.tasks.llm.local.generation import GenRequest, GenResult  # noqa: E402
from rpbench.tasks.llm.local.hf import TransformersEngine  # noqa: E402
from rpbench.tasks.llm.local.llamacpp import LlamaCppEngine  # noqa: E402
from rpbench.tasks.llm.local.models import EMBEDDED_SPEC, find_embedded_gguf  # noqa: E402
from rpbench.tasks.llm.local.tokens import tokenizer  # noqa: E402

BOOK = ROOT / "samples" / "books" / "the_keepers_ledger.en.txt"
SCHEMA = {
    "type": "object",
    "properties": {"reasoning": {"type": "string", "maxLength": 400},
                   "score": {"type": "integer", "minimum": 1, "maximum": 5}},
    "required": ["reasoning", "score"],
}
CARD_TOKENS = (150, 300, 450, 600)


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


def _take(ids: list[int], start: int, n: int) -> str:
    return str(tokenizer().decode(ids[start:start + n]))


def workload(n: int, unique: bool, seed: int = 0) -> list[GenRequest]:
    """``n`` requests of 200-1,500 prompt tokens, budgets 64-256, every third one schema-constrained."""
    rng = random.Random(seed)
    ids = tokenizer().encode(BOOK.read_text(encoding="utf-8")).ids
    cards = [f"You are playing a character from the story below. Stay in character.\n\n{_take(ids, 40 * k, t)}"
             for k, t in enumerate(CARD_TOKENS)]
    requests = []
    for i in range(n):
        total = rng.randint(200, 1500)
        card = rng.choice([c for c, t in zip(cards, CARD_TOKENS, strict=True) if t < total - 40] or cards[:1])
        if unique:  # no two prompts share a prefix beyond the chat template's first tokens
            card = f"Request {i}. " + card
        # A window of the book at its own offset, wrapping round (the sample book is ~1,700 tokens long).
        own = _take(ids * 3, rng.randrange(len(ids)), max(40, total - len(tokenizer().encode(card).ids)))
        schema = SCHEMA if i % 3 == 0 else None
        ask = "Judge how well the passage keeps its tone; give reasoning and a score." if schema else \
            "Reply in character to the passage."
        requests.append(GenRequest(
            messages=[{"role": "system", "content": card}, {"role": "user", "content": f"{own}\n\n{ask}"}],
            max_tokens=rng.choice((64, 128, 192, 256)), temperature=0.7, top_p=None, seed=i, schema=schema,
            repetition_penalty=1.2))
    return requests


def fresh(requests: list[GenRequest]) -> list[GenRequest]:
    return [GenRequest(r.messages, r.max_tokens, r.temperature, r.top_p, r.seed, r.schema, r.repetition_penalty)
            for r in requests]


def run(submit: object, requests: list[GenRequest], in_flight: int) -> tuple[float, list[GenResult]]:
    """Send ``requests`` keeping ``in_flight`` of them outstanding; wall seconds and results."""
    start = time.perf_counter()
    with ThreadPoolExecutor(in_flight) as pool:
        results = list(pool.map(lambda r: submit(r).result(), requests))  # type: ignore[operator]
    return time.perf_counter() - start, results


def report(prefix: str, elapsed: float, results: list[GenResult]) -> float:
    made = sum(r.completion_tokens for r in results)
    read = sum(r.prompt_tokens for r in results)
    say(f"{prefix}_requests", len(results))
    say(f"{prefix}_prompt_tokens_mean", round(read / len(results)))
    say(f"{prefix}_prompt_tokens_reused_share", f"{sum(r.cached_tokens for r in results) / max(read, 1):.2f}")
    say(f"{prefix}_reply_tokens_mean", round(made / len(results)))
    say(f"{prefix}_seconds", f"{elapsed:.1f}")
    say(f"{prefix}_prompt_plus_reply_tokens_per_s", f"{(made + read) / elapsed:.1f}")
    say(f"{prefix}_reply_tokens_per_s", f"{made / elapsed:.1f}")
    return made / elapsed


def short_workload(n: int) -> list[GenRequest]:
    """Decode-bound requests: a one-line prompt and a 128-token budget (how the 124 tokens/s reference ran)."""
    return [GenRequest([{"role": "user", "content": f"Tell a long story about a lighthouse keeper, number {i}."}],
                       128, 0.7, None, i, None, 1.2) for i in range(n)]


def engine(slots: int) -> LlamaCppEngine:
    spec = EMBEDDED_SPEC.model_copy(update={"parallel": slots})
    built = LlamaCppEngine(f"bench-{slots}", find_embedded_gguf(), spec)
    built.generate(GenRequest([{"role": "user", "content": "warm up"}], 4, 0.0, None, 0, None))
    return built


def main(unique: bool, n: int, skip_transformers: bool) -> None:
    say("cpu_count", os.cpu_count())
    say("workload", "unique_prompts" if unique else "shared_system_parts")
    say("llamacpp_weights", EMBEDDED_SPEC.requantize or "as shipped")
    say("llamacpp_default_slots", EMBEDDED_SPEC.parallel)
    figures: dict[tuple[int, int], float] = {}
    for slots in (1, 8):
        llama = engine(slots)
        for in_flight, count in ((1, max(6, n // 4)), (8, n), (32, max(n, 32))):
            if slots == 1 and in_flight == 32:
                continue  # one slot serves 32 in flight exactly as 8: a queue
            elapsed, results = run(llama.submit, fresh(workload(count, unique, seed=in_flight)), in_flight)
            figures[slots, in_flight] = report(f"llamacpp_{slots}slot_{in_flight}_in_flight", elapsed, results)
        elapsed, results = run(llama.submit, short_workload(16), 8)
        figures[slots, 0] = report(f"llamacpp_{slots}slot_short_prompts_8_in_flight", elapsed, results)
    if not skip_transformers:
        torch_engine = TransformersEngine("bench-transformers", find_embedded_gguf(), max_batch=1)
        torch_engine.generate([{"role": "user", "content": "warm up"}], max_tokens=4, temperature=0.0, top_p=None,
                              seed=0, schema=None)
        elapsed, results = run(torch_engine.submit, fresh(workload(max(6, n // 4), unique, seed=1)), 1)
        baseline = report("transformers_single_stream", elapsed, results)
        elapsed, results = run(torch_engine.submit, short_workload(4), 1)
        short_baseline = report("transformers_single_stream_short_prompts", elapsed, results)
        say("default_8_in_flight_vs_transformers_single", f"{figures[EMBEDDED_SPEC.parallel, 8] / baseline:.2f}")
        say("8slot_short_prompts_vs_transformers_single", f"{figures[8, 0] / short_baseline:.2f}")
    say("default_8_in_flight_vs_llamacpp_single_stream", f"{figures[EMBEDDED_SPEC.parallel, 8] / figures[1, 1]:.2f}")
    say("8slot_8_in_flight_vs_llamacpp_single_stream", f"{figures[8, 8] / figures[1, 1]:.2f}")
    say("8slot_short_prompts_vs_1slot_short_prompts", f"{figures[8, 0] / figures[1, 0]:.2f}")
    say("llamacpp_8slot_short_prompts_8_in_flight_reply_tokens_per_s", f"{figures[8, 0]:.1f}")
    say("default_engine_8_in_flight_reply_tokens_per_s", f"{figures[EMBEDDED_SPEC.parallel, 8]:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--unique", action="store_true", help="no shared system parts: every prompt unique")
    parser.add_argument("--requests", type=int, default=24, help="requests at 8 in flight (default 24)")
    parser.add_argument("--skip-transformers", action="store_true", help="skip the transformers baseline (slow)")
    args = parser.parse_args()
    main(args.unique, args.requests, args.skip_transformers)
