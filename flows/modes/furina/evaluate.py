"""Flow: models under test answer the benchmark; both-order judgments; scores, checks, reports."""

from __future__ import annotations

from prefect import flow

from rpbench.flows.modes.furina.evaluate_stages import evaluate_models
from rpbench.flows.kit.run import finish_run, publish_run_summary


@flow(name="rpbench-evaluate", log_prints=True)
async def evaluate(bench: str, models: list[str], out: str = "runs/eval", resamples: int = 1000, seed: int = 0,
                   models_file: str | None = None, cache: str | None = None) -> dict:
    summary = await evaluate_models(bench, models, out, resamples, seed, models_file, cache)
    manifest = finish_run(out, models_file, cache, evaluation=summary)
    publish_run_summary(out, "rpbench-eval")
    return manifest
