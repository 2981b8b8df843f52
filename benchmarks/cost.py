"""What each benchmark costs per item at gpt-4o-mini's prices, and how much of its prompts a provider could cache.

Every registered mode's smoke scenario (the shipped samples at the hardening tests' sizes) is planned with
``--plan --json`` step by step and then run against the loopback server (so each step's inputs exist for the
next). From the plans: each stage's share of prompt tokens that sit in a prefix of 1,024 tokens or more already
sent earlier in the run (what OpenAI bills at its cached price; Anthropic with cache_control), and each mode's
planned dollars per scored item, low (replies as long as the cache's, or the stand-ins') and high (every reply
at max_tokens, every attempt), at litellm's price for openai/gpt-4o-mini.

Then the released data at its real sizes, planned only (nothing is run): RoleInteract on SocialBench's
emotional_perception.json, RoleLLM (zero-shot) on RoleBench's English and Chinese test sets, and CoSER on the
first 20 circumstances of its test set, where present in ../shared/data/: each one's prompt tokens per call,
cacheable share and dollars per item (a question; for CoSER a circumstance). The templates put what repeats across
a stage's calls first (rubric, profile, scene, then what varies), so there is no reordering to measure before and
after; these lines say whether a stage's prompts are long enough for a provider to cache at all.

Prints key=value lines; the headline (the cacheable share of all prompt tokens) is last.
Usage: .venv/bin/python benchmarks/cost.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rpbench.tasks.core.offline import OFFLINE_ENV  # noqa: E402
from tests.shared_copies import use_shared_releases  # noqa: E402

use_shared_releases()  # the releases' code the runs read their prompts from, where ../shared has it

os.environ.update(OFFLINE_ENV)


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


def low(value: object) -> float:
    return float(value[0] if isinstance(value, list) else value)  # type: ignore[index,arg-type]


def high(value: object) -> float:
    return float(value[1] if isinstance(value, list) else value)  # type: ignore[index,arg-type]


def main() -> None:
    import pyarrow.parquet as pq

    from rpbench.flows.kit.front.registry import modes
    from tests.helpers import TEST_KEY_ENV, any_mode_responder, rpbench
    from tests.loopback import LoopbackServer

    server = LoopbackServer().start()
    server.responder = any_mode_responder
    os.environ[TEST_KEY_ENV] = "sk-benchmark-0000000000000000"
    os.environ.setdefault("RPBENCH_PROGRESS_BAR", "0")
    all_prompt = all_cacheable = 0.0
    with tempfile.TemporaryDirectory(prefix="rpbench-cost-") as tmp:
        for name, mode in sorted(modes().items()):
            work = Path(tmp) / name
            work.mkdir()
            models = work / "models.toml"
            models.write_text(f'[default]\nmodel = "openai/gpt-4o-mini"\napi_base = "{server.base_url}"\n'
                              f'schema_rules = "vllm"\napi_key_env = "{TEST_KEY_ENV}"\nstructured = "json_schema"\n')
            shared = ["--models-file", str(models), "--cache", str(work / "calls.sqlite")]
            stages: dict[str, list[float]] = {}
            cost_low = cost_high = 0.0
            steps = mode.smoke_steps(work / "steps")
            for step in steps:
                if step.uses_models:
                    planned = rpbench(*step.args, *shared, "--plan", "--json")
                    if planned.returncode:
                        sys.exit(f"{name} {step.name} --plan failed:\n{planned.stderr[-2000:]}")
                    plan = json.loads(planned.stdout.strip().splitlines()[-1])
                    for row in plan["stages"]:
                        got = stages.setdefault(row["stage"], [0.0, 0.0])
                        got[0] += low(row["prompt_tokens"])
                        got[1] += row["cacheable_prompt_tokens"]
                    cost_low += low(plan["total"]["cost_usd"])
                    cost_high += high(plan["total"]["cost_usd"])
                ran = rpbench(*step.args, *(shared if step.uses_models else []))
                if ran.returncode:
                    sys.exit(f"{name} {step.name} failed:\n{ran.stderr[-2000:]}")
            table = steps[-1].out / mode.load_item_table().filename
            items = pq.read_metadata(table).num_rows if table.is_file() else 0
            for stage, (prompt, cacheable) in sorted(stages.items()):
                if prompt:
                    say(f"{name}.{stage}.cacheable_share", f"{cacheable / prompt:.3f}")
                all_prompt += prompt
                all_cacheable += cacheable
            say(f"{name}.items", items)
            if items:
                say(f"{name}.usd_per_item_low", f"{cost_low / items:.6f}")
                say(f"{name}.usd_per_item_high", f"{cost_high / items:.6f}")
    server.stop()
    released_sizes()
    say("prompt_tokens", int(all_prompt))
    say("cacheable_share_of_prompt_tokens", f"{all_cacheable / all_prompt:.3f}" if all_prompt else "0")


RELEASED = ROOT.parent / "shared" / "data"
# (name, files under RELEASED, the command's words before its data, items it covers: None when one per call)
RELEASED_RUNS = [
    ("socialbench_ep", ["socialbench/emotional_perception.json"], ["roleinteract", "run", "--drop-unanswerable"],
     None),
    ("rolebench_eng", ["rolebench/rolebench-eng"], ["rolellm", "eval", "--mode", "zsp"], None),
    ("rolebench_zh", ["rolebench/rolebench-zh"], ["rolellm", "eval", "--mode", "zsp"], None),
    ("coser_test", ["coser/test/test_set.json"], ["coser", "run", "--limit", "20", "--judge", "openai/gpt-4o-mini"],
     20),
]


def released_sizes() -> None:
    from tests.helpers import rpbench

    with tempfile.TemporaryDirectory(prefix="rpbench-cost-released-") as tmp:
        models = Path(tmp) / "models.toml"
        models.write_text('[default]\nmodel = "openai/gpt-4o-mini"\n')
        for name, files, words, items in RELEASED_RUNS:
            paths = [RELEASED / f for f in files]
            if not all(p.exists() for p in paths):
                say(f"released.{name}", f"skipped (not in {RELEASED})")
                continue
            data = [x for p in paths for x in ("--data", str(p))]
            planned = rpbench(*words, *data, "--model", "openai/gpt-4o-mini", "--models-file", str(models),
                              "--out", str(Path(tmp) / name), "--plan", "--json")
            if planned.returncode:
                sys.exit(f"released {name} --plan failed:\n{planned.stderr[-2000:]}")
            total = json.loads(planned.stdout.strip().splitlines()[-1])["total"]
            calls, prompt = low(total["calls"]), low(total["prompt_tokens"])
            say(f"released.{name}.calls", int(calls))
            say(f"released.{name}.prompt_tokens_per_call", f"{prompt / calls:.0f}" if calls else "0")
            say(f"released.{name}.cacheable_share", f"{total['cacheable_share']:.3f}")
            per = items or calls
            say(f"released.{name}.usd_per_item_low", f"{low(total['cost_usd']) / per:.6f}" if per else "0")
            say(f"released.{name}.usd_per_item_high", f"{high(total['cost_usd']) / per:.6f}" if per else "0")


if __name__ == "__main__":
    main()
