"""Scale-out on this machine, measured in one run: the Dask runner against the default one, and two Prefect
workers against one flow run after the other.

Everything runs against one local cluster (deployments/cluster.py): PostgreSQL, a Prefect server on it, a
process work pool with rpbench's deployments and two Prefect workers. The models are the loopback server
(LATENCY s a reply).

1. One evaluation sharded over models: `rpbench rolellm eval` with MODELS models on a RoleBench-layout set of
   QUESTIONS questions (made from the shipped sample), once with stage shards in threads (the default) and
   once on a local Dask cluster of two worker processes. Fresh output folder and call cache each time, so
   both send every call. The tables of the two runs must be equal. What a second process can buy is CPU
   (prompting, retrieval, parsing, scoring), so the endpoint's bound is set high enough to bind neither run
   (EVAL_CONCURRENCY per process, shared limits off: the command owns its endpoint).
2. Two flow runs of the same deployment (distinct models, outputs and caches, RUN_LIMIT questions each)
   through the two workers: triggered together vs one after the other. Here each endpoint's limit
   (RUN_CONCURRENCY) is shared through the Prefect server, as it is whenever a server is configured: each
   request also takes and gives back a slot there.

Each ratio is the slower way's wall time over the faster way's (above 1: the scale-out way is faster).
Prints key=value lines; the headline figure (the Dask runner's speed-up) is last.
Usage: .venv/bin/python benchmarks/scaleout.py [QUESTIONS]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rpbench.deployments.cluster import local_cluster  # noqa: E402
from tests.helpers import any_mode_responder  # noqa: E402
from tests.loopback import LoopbackServer  # noqa: E402
from tests.shared_copies import use_shared_releases  # noqa: E402

use_shared_releases()  # the releases' code the runs read their prompts from, where ../shared has it

LATENCY, MODELS, EVAL_CONCURRENCY, RUN_CONCURRENCY, RUN_LIMIT = 0.05, 4, 64, 16, 150
QUESTIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 1600
KEY_ENV = "RPBENCH_SCALEOUT_KEY"
SAMPLE = ROOT / "samples" / "rolellm" / "rolebench"
CLI = [sys.executable, "-m", "rpbench.flows.cli.main"]


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


def make_data(folder: Path, questions: int) -> Path:
    """A RoleBench layout: the shipped Chinese profiles and ``questions`` general questions made from the
    sample's, each with its own number (so no two prompts, and no two cached calls, are the same)."""
    data = folder / "rolebench"
    shutil.copytree(SAMPLE / "profiles-zh", data / "profiles-zh")
    sample = [json.loads(x) for x in (SAMPLE / "rolebench-zh" / "general" / "test.jsonl").read_text().splitlines()]
    out = data / "rolebench-zh" / "general" / "test.jsonl"
    out.parent.mkdir(parents=True)
    rows = [{**sample[k % len(sample)], "question": f"{sample[k % len(sample)]['question']}（第{k + 1}问）"}
            for k in range(questions)]
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return data / "rolebench-zh"


def models_file(folder: Path, server: LoopbackServer, concurrency: int) -> Path:
    path = folder / f"models-{concurrency}.toml"
    path.write_text(f'[default]\nmodel = "openai/scaleout"\napi_base = "{server.base_url}"\n'
                    'schema_rules = "vllm"\napi_key_env = '
                    f'"{KEY_ENV}"\ntimeout = 30\nmax_concurrency = {concurrency}\n')
    return path


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}\n{(done.stderr or done.stdout)[-3000:]}")
    return time.perf_counter() - started


def tables(folder: Path) -> dict[str, list[dict]]:
    """The run's result tables, without what differs from run to run by nature (timings, the call log)."""
    import pyarrow.parquet as pq

    return {p.name: pq.read_table(p).to_pylist() for p in sorted(folder.glob("*.parquet")) if p.name != "calls.parquet"}


def calls_per_second(folder: Path) -> float:
    """Model calls a second while a run's calls went out (first sent to last answered)."""
    import pyarrow.parquet as pq

    calls = pq.read_table(folder / "calls.parquet").to_pylist()
    started = [c["started_at"].timestamp() for c in calls]
    ended = [c["started_at"].timestamp() + (c["latency_s"] or 0) for c in calls]
    return len(calls) / max(max(ended) - min(started), 1e-9)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="rpbench-scaleout-"))
    work.chmod(0o755)  # PostgreSQL runs as its own user when this runs as root: it must reach its folder
    server = LoopbackServer(latency=LATENCY, responder=any_mode_responder).start()
    try:
        data = make_data(work, QUESTIONS)
        models, shared = models_file(work, server, EVAL_CONCURRENCY), models_file(work, server, RUN_CONCURRENCY)
        env = {KEY_ENV: "sk-scaleout", "RPBENCH_PROGRESS_BAR": "0"}
        with local_cluster(work / "cluster", workers=2, postgres=True, cwd=work, **env) as cluster:
            say("prefect_database", "postgresql")
            say("questions", QUESTIONS)
            say("models", MODELS)
            say("loopback_latency_s", LATENCY)
            run_env = cluster.env(**env)
            eval_env = {**run_env, "RPBENCH_SHARED_LIMITS": "0"}
            eval_args = ["rolellm", "eval", "--data", str(data), "--models-file", str(models), "--mode", "fsd"]
            for k in range(MODELS):
                eval_args += ["--model", f"openai/scaleout-{k}"]

            def evaluation(name: str, *runner: str) -> float:
                return timed([*CLI, *runner, *eval_args, "--out", str(work / name),
                              "--cache", str(work / f"{name}.sqlite")], eval_env, work)

            threads = evaluation("eval-threads")
            dask = evaluation("eval-dask", "--runner", "dask", "--dask-workers", "2")
            say("eval_threads_s", f"{threads:.1f}")
            say("eval_dask_2_workers_s", f"{dask:.1f}")
            say("eval_tables_equal", tables(work / "eval-threads") == tables(work / "eval-dask"))

            def trigger(name: str, wait: bool) -> list[str]:
                # Each run its own two models (endpoints), as two teams' runs would be: one shared key would
                # hold both runs to its one limit, whatever the number of workers.
                first = 0 if name.endswith("1") else 2
                return [*CLI, "trigger", "rpbench-rolellm-eval/on-demand", "--param", f"data={data}",
                        "--param", f"models=openai/scaleout-{first}", "--param", f"models=openai/scaleout-{first + 1}",
                        "--param", f"models_file={shared}", "--param", f"limit={RUN_LIMIT}",
                        "--param", f"out={work / name}",
                        "--param", f"cache={work / name}.sqlite", "--timeout", "1800",
                        *([] if wait else ["--no-wait"])]

            started = time.perf_counter()
            for name in ("seq-1", "seq-2"):
                timed(trigger(name, wait=True), run_env, work)
            sequential = time.perf_counter() - started
            started = time.perf_counter()
            both = [subprocess.Popen(trigger(name, wait=True), env=run_env, cwd=work, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True) for name in ("par-1", "par-2")]
            for proc in both:
                _, err = proc.communicate()
                if proc.returncode:
                    raise SystemExit(f"a concurrent run failed: {err[-3000:]}")
            concurrent = time.perf_counter() - started
            say("eval_threads_calls_per_s", f"{calls_per_second(work / 'eval-threads'):.0f}")
            say("shared_limit_calls_per_s", f"{calls_per_second(work / 'seq-1'):.0f}")
            say("two_runs_one_after_the_other_s", f"{sequential:.1f}")
            say("two_runs_two_workers_s", f"{concurrent:.1f}")
            say("two_workers_speedup", f"{sequential / concurrent:.2f}")
            say("dask_runner_speedup", f"{threads / dask:.2f}")
    finally:
        server.stop()
        if os.environ.get("RPBENCH_KEEP") != "1":
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept: {work}", file=sys.stderr)


if __name__ == "__main__":
    main()
