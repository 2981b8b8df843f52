"""The demo: the whole pipeline on the embedded local model, small enough for a laptop CPU.

pool (the project's sample book) -> starter characters -> benchmark (tau = 1)
-> evaluation of two local configurations (greedy and sampled), written under
``out/pool``, ``out/bench`` and ``out/eval``. Each stage is its own flow, run
here as a subflow, so the Prefect UI shows the same runs a user would start
one by one.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from rpbench.samples import sample_path

from rpbench.flows.modes.furina.build import build_benchmark
from rpbench.flows.modes.furina.evaluate import evaluate
from rpbench.flows.modes.furina.pool import build_pool

DEMO_BOOK = sample_path("books", "the_keepers_ledger.en.txt")
DEMO_CHARACTERS = sample_path("characters", "starter.en.yaml")
DEMO_CAST = ["Sherlock Holmes", "Elizabeth Bennet"]
DEMO_MODELS = ["local-greedy", "local-sampled"]


@flow(name="rpbench-demo", log_prints=True)
async def demo(out: str = "runs/demo", models: str | None = None, cache: str | None = None) -> dict:
    root = Path(out)
    await build_pool(books=[str(DEMO_BOOK)], out=str(root / "pool"), target_tokens=1024, min_tokens=512,
                     max_tokens=2048, min_utterances=2, models=models, cache=cache)
    await build_benchmark(characters=str(DEMO_CHARACTERS), pool=str(root / "pool"), out=str(root / "bench"),
                          only=DEMO_CAST, tau=1, min_rounds=2, max_rounds=4, max_dialogues_per_character=2,
                          keep_grades=["poor", "moderate", "high"], concurrency=4, models=models, cache=cache)
    return await evaluate(bench=str(root / "bench"), models=DEMO_MODELS, out=str(root / "eval"), resamples=1000,
                          models_file=models, cache=cache)
