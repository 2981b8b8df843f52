"""The demo: the whole pipeline on the embedded local model, small enough for a laptop CPU.

pool (the project's sample book) -> starter characters -> benchmark (tau = 1)
-> evaluation of two local configurations (greedy and sampled), written under
``out/pool``, ``out/bench`` and ``out/eval``. Each part is its own flow, run
here as a subflow, so the Prefect UI shows the same runs and stages a user
would start one by one; a second run finds every stage cached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from rpbench.flows.kit.running.finish import failed_state
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.modes.furina.build import build_benchmark
from rpbench.flows.modes.furina.evaluate import evaluate
from rpbench.flows.modes.furina.pool import build_pool
from rpbench.flows.modes.furina.settings import BuildSettings, DemoSettings, EvalSettings, PoolSettings
from rpbench.samples import sample_path
from rpbench.tasks.core.errors import RunFailed

DEMO_BOOK = sample_path("books", "the_keepers_ledger.en.txt")
DEMO_CHARACTERS = sample_path("characters", "starter.en.yaml")
DEMO_CAST = ["Sherlock Holmes", "Elizabeth Bennet"]
DEMO_MODELS = ["local-greedy", "local-sampled"]


def demo_settings(s: DemoSettings) -> tuple[PoolSettings, BuildSettings, EvalSettings]:
    """The three flows' settings for the demo: small chunks, tau = 1, short dialogues, two local models."""
    root, models, cache = Path(s.out), s.models_file, s.cache
    pool = PoolSettings(books=[str(DEMO_BOOK)], out=str(root / "pool"), target_tokens=1024, min_tokens=512,
                        max_tokens=2048, min_utterances=2, models_file=models, cache=cache)
    # One dialogue per character of up to four exchanges (the test character answers every other turn):
    # DWRS sees its own earlier draws within a dialogue, so the four exchanges target different dimensions,
    # and each item keeps its exchange's target: the 135M judge, left to choose, names one dimension for
    # nearly every turn.
    bench = BuildSettings(characters=str(DEMO_CHARACTERS), pool=pool.out, out=str(root / "bench"), only=DEMO_CAST,
                          tau=1, min_rounds=2, max_rounds=8, max_test_gap=1, budget=1,
                          keep_grades=["poor", "moderate", "high"], wave_size=1, dimension_by="target",
                          models_file=models, cache=cache)
    evaluation = EvalSettings(bench=bench.out, models=DEMO_MODELS, out=str(root / "eval"), models_file=models,
                              cache=cache)
    return pool, bench, evaluation


@flow(name="rpbench-demo", log_prints=True)
@flow_body
def demo(settings: DemoSettings) -> Any:
    """The whole pipeline on the embedded local model (no keys, no network): pool, benchmark, evaluation."""
    pool, bench, evaluation = demo_settings(settings)
    try:
        pooled = build_pool(pool)
        built = build_benchmark(bench)
        manifest = evaluate(evaluation)
    except RunFailed as failed:  # a part failed by the rule: the demo is Failed too, with its reasons
        return failed_state(failed)
    manifest["demo"] = {name: m.get("this_run") for name, m in (("pool", pooled), ("bench", built),
                                                                ("eval", manifest))}
    return manifest
