"""An evaluation of 100,000 calls, and a burst of 2,000, at 256 in flight through a Prefect server, measured in
one run, each beside a bare aiohttp client sending as many requests to the same server in the same run.

`rpbench roleinteract run` on ITEMS generated items (each its own dialogue, so no two calls are alike) for
MODELS models, each model its own endpoint on the loopback server (LATENCY s a reply, in its own process)
with max_concurrency = IN_FLIGHT / MODELS: IN_FLIGHT requests may be in flight in all. As the README's recipe
for hundreds in flight: the models reach the server by litellm's route for a vLLM server (ROUTE, default
hosted_vllm; `--route openai` goes through OpenAI's SDK, about twice litellm's CPU a call) and their calls
are sent by PROCESSES worker processes (default 2, shared by all models). The run goes
through a Prefect server (`prefect server start` on PostgreSQL, as the README's recipe for a team) with
shared limits on, so every endpoint's slots are leased from the server. It is run at CALLS / 10 calls and
at CALLS calls, so the growth shows (time and memory per call should stay flat), and, at CALLS, once more
with the stage shards on a local Dask cluster of 2 workers.

Printed for each run: calls/s as a ratio of the bound (IN_FLIGHT / LATENCY) and of the bare client's calls/s
(first call sent to last answered, and over the command's whole wall time),
peak RSS of the command's whole process tree, the call cache's size and its lookup time, the wall time of each
stage (its first call sent to its last answered) and of the command; then the growth of RSS from the small run
to the big one; for the burst, also what litellm by itself (no gateway, no Prefect) reaches as a ratio of the
bare client's, in one process and in as many processes as the run has workers, sending the same calls: litellm's
CPU a call is what bounds a burst on few cores, so the second is the ceiling for the run's own. The headline,
last: calls/s as a ratio of the bare client's at CALLS calls.
Usage: .venv/bin/python benchmarks/scale.py [--calls 100000] [--burst 2000] [--in-flight 256] [--models 4]
       [--latency 1] [--processes 2] [--route hosted_vllm] [--no-dask] [--no-small] [--no-postgres] [--api-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rpbench.deployments.cluster import Cluster, start_postgres, start_server  # noqa: E402
from tests.loopback import bare_client_rate, spawn  # noqa: E402
from tests.shared_copies import use_shared_releases  # noqa: E402

use_shared_releases()  # the releases' code the runs read their prompts from, where ../shared has it

KEY_ENV = "RPBENCH_SCALE_KEY"
CLI = [sys.executable, "-m", "rpbench.flows.cli.main"]
EXAMPLE = ROOT / "samples" / "roleinteract" / "example.json"


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


def make_items(path: Path, n: int) -> Path:
    """``n`` RoleInteract items in the released layout, made from the shipped example, each with a numbered
    line of its own (so every request is distinct and nothing is answered from the cache)."""
    sample = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    single = [s for s in sample if len(s["label"]) == 1 and isinstance(s.get("dialogue"), list)]
    items = []
    for k in range(n):
        item = json.loads(json.dumps(single[k % len(single)]))
        item["dialogue"][-1]["value"] = f"{item['dialogue'][-1]['value']} (#{k})"
        items.append(item)
    path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return path


def models_file(folder: Path, base_url: str, per_model: int, processes: int, route: str) -> Path:
    """Every model (``ROUTE/scale-K``) on the loopback server; ``processes`` worker processes send the calls
    (litellm's CPU per call spread over cores, as the README's recipe for hundreds in flight)."""
    path = folder / "models.toml"
    path.write_text(f'[default]\nmodel = "{route}/scale"\napi_base = "{base_url}"\nschema_rules = "vllm"\n'
                    f'api_key_env = "{KEY_ENV}"\n'
                    f'timeout = 60\nmax_concurrency = {per_model}\nprocesses = {processes}\n', encoding="utf-8")
    return path


class PeakRss:
    """The largest resident memory of a process and its children together, sampled every 0.2 s."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.root, self.peak, self._stop = psutil.Process(pid), 0, threading.Event()
        self.samples: list[tuple[float, int]] = []  # (Unix time, RSS of the tree): each stage's own peak
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                tree = [self.root, *self.root.children(recursive=True)]
                rss = sum(p.memory_info().rss for p in tree if p.is_running())
                self.peak = max(self.peak, rss)
                self.samples.append((time.time(), rss))
            except psutil.Error:
                pass
            self._stop.wait(0.2)

    def peak_between(self, start: float, end: float) -> int:
        return max((rss for t, rss in self.samples if start <= t <= end), default=0)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(5)
        return self.peak


def stage_walls(api_url: str, since: float, wait_s: float = 60.0) -> dict[str, tuple[float, float]]:
    """Each stage task's start and end (Unix times) in the RoleInteract flow run that started after ``since``
    (a Unix time) on the server (a shard is a stage of its own): the server may hold other runs, started later
    or never.

    The server records task runs from events a little after they happen, so this reads until two reads a second
    apart agree and at least one stage has ended (or wait_s passes)."""
    from datetime import UTC, datetime

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterStartTime,
    )
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def read() -> dict[str, tuple[float, float]]:
        async with get_client() as client:
            after = datetime.fromtimestamp(since, UTC)
            found = await client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=["rpbench-roleinteract"])),
                flow_run_filter=FlowRunFilter(start_time=FlowRunFilterStartTime(after_=after)),
                sort=FlowRunSort.START_TIME_DESC, limit=1)
            if not found:
                return {}
            newest = found[0]
            tasks = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[newest.id])))
            return {t.name: (t.start_time.timestamp(), t.end_time.timestamp()) for t in tasks
                    if t.start_time is not None and t.end_time is not None}

    deadline, last = time.monotonic() + wait_s, None
    with temporary_settings({PREFECT_API_URL: api_url}):
        while True:
            walls = run_coro_as_sync(read()) or {}
            if (walls and walls == last) or time.monotonic() > deadline:
                return walls
            last = walls
            time.sleep(1.0)


def litellm_alone(base_url: str, route: str, in_flight: int, n: int, tag: str) -> None:
    """One process of ``litellm_alone_rate``: says it is ready, waits for a line on stdin, sends ``n`` distinct
    requests ``in_flight`` at a time on the event loop the gateway's workers use, and prints when it started and
    ended (wall clock, so the parent can join the processes' spans)."""
    from rpbench.tasks.llm.event_loop import run_coroutine
    from rpbench.tasks.llm.litellm_call import add_transport, new_session, send, tune_litellm, warm_up

    tune_litellm()
    os.environ.setdefault(KEY_ENV, "sk-scale")

    async def main() -> None:
        await warm_up()
        gate, session = asyncio.Semaphore(in_flight), new_session()

        async def one(i: int) -> None:
            async with gate:
                kwargs = {"model": f"{route}/alone", "api_base": base_url, "num_retries": 0, "timeout": 60,
                          "messages": [{"role": "user", "content": f"litellm alone {tag} {i}"}]}
                assert (await send(add_transport(kwargs, KEY_ENV, session)))["text"]

        print("ready", flush=True)
        sys.stdin.readline()
        started = time.time()
        await asyncio.gather(*(one(i) for i in range(n)))
        print(started, time.time(), flush=True)
        await session.close()

    run_coroutine(main())


def litellm_alone_rate(base_url: str, route: str, in_flight: int, n: int, processes: int) -> float:
    """Calls/s of litellm by itself (rpbench's tuning, no gateway, no Prefect) sending ``n`` distinct requests,
    ``in_flight`` at a time, from ``processes`` processes at once (as many as the run's workers, each with its
    share): what litellm's own CPU a call allows on this machine with that many processes."""
    share = [n // processes + (k < n % processes) for k in range(processes)]
    children = [subprocess.Popen([sys.executable, __file__, "--alone", base_url, route,
                                  str(max(1, in_flight // processes)), str(share[k]), str(k)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for k in range(processes)]
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready", "a litellm-alone process failed"
    for child in children:  # all at once, as a run's workers get a burst's first wave
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    spans = []
    for child in children:
        assert child.stdout is not None
        spans.append(tuple(float(x) for x in child.stdout.readline().split()))
        child.wait(60)
    return n / (max(end for _, end in spans) - min(start for start, _ in spans))


def calls_per_second(out: Path) -> tuple[int, float, float, float]:
    """Calls sent, their rate from the first sent to the last answered, and those two moments (wall clock)."""
    import pyarrow.parquet as pq

    calls = pq.read_table(out / "calls.parquet", columns=["started_at", "latency_s", "cached"]).to_pylist()
    sent = [c for c in calls if not c["cached"]]
    first = min(c["started_at"].timestamp() for c in sent)
    last = max(c["started_at"].timestamp() + (c["latency_s"] or 0.0) for c in sent)
    return len(sent), len(sent) / max(last - first, 1e-9), first, last


def cache_lookup_ms(cache: Path, samples: int = 2000) -> float:
    """Mean time to find one call in the cache by its key, over keys drawn from it."""
    from rpbench.tasks.llm.cache import CallCache

    with sqlite3.connect(cache) as db:
        table = db.execute("select name from sqlite_master where type = 'table'").fetchone()[0]
        keys = [k for (k,) in db.execute(f"select key from {table}")]
    picked = random.Random(0).sample(keys, min(samples, len(keys)))
    store = CallCache(cache)
    started = time.perf_counter()
    for key in picked:
        assert store.get(key) is not None
    return 1000 * (time.perf_counter() - started) / max(len(picked), 1)


def run(label: str, work: Path, data: Path, models: Path, n_models: int, route: str, env: dict[str, str],
        bound_per_s: float, *runner: str) -> dict[str, float]:
    out, cache = work / label, work / f"{label}.sqlite"
    args = [*CLI, *runner, "roleinteract", "run", "--data", str(data), "--models-file", str(models),
            "--out", str(out), "--cache", str(cache), "--resamples", "40"]
    for k in range(n_models):
        args += ["--model", f"{route}/scale-{k}"]
    started, since = time.perf_counter(), time.time()
    proc = subprocess.Popen(args, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watch = PeakRss(proc.pid)
    output, _ = proc.communicate()
    wall, ended = time.perf_counter() - started, time.time()
    peak = watch.stop()
    if proc.returncode:
        raise SystemExit(f"{label} failed ({proc.returncode}):\n{output[-3000:]}")
    sent, rate, first, last = calls_per_second(out)
    say(f"{label}_calls", sent)
    say(f"{label}_wall_s", f"{wall:.1f}")
    # Where the wall time outside the calls goes: the command's start (imports, the check, the flow run and its
    # leases) before the first call, and the report and exit after the last answer.
    say(f"{label}_before_first_call_s", f"{first - since:.1f}")
    say(f"{label}_after_last_answer_s", f"{ended - last:.1f}")
    for stage, (start, end) in sorted(stage_walls(env["PREFECT_API_URL"], since).items()):
        say(f"{label}_stage_{stage}_s", f"{end - start:.1f}")
        say(f"{label}_stage_{stage}_peak_rss_mb", f"{watch.peak_between(start, end) / 2**20:.0f}")
    say(f"{label}_peak_rss_mb", f"{peak / 2**20:.0f}")
    say(f"{label}_call_cache_mb", f"{cache.stat().st_size / 2**20:.1f}")
    say(f"{label}_call_cache_lookup_ms", f"{cache_lookup_ms(cache):.3f}")
    say(f"{label}_calls_per_s", f"{rate:.1f}")
    say(f"{label}_calls_per_s_ratio_of_bound", f"{rate / bound_per_s:.3f}")
    return {"rate": rate / bound_per_s, "rss": peak, "wall": wall, "sent": sent}


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--burst", type=int, default=2_000, help="calls of the short run (0: none)")
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--processes", type=int, default=2, help="worker processes sending the models' calls")
    parser.add_argument("--route", default="hosted_vllm",
                        help="litellm's route to the loopback server: openai (through OpenAI's SDK) or hosted_vllm "
                             "(litellm's own HTTP client, the route for a vLLM server)")
    parser.add_argument("--no-dask", action="store_true", help="skip the run on a local Dask cluster")
    parser.add_argument("--no-small", action="store_true", help="skip the run at a tenth of the calls")
    parser.add_argument("--no-postgres", action="store_true", help="the Prefect server on SQLite")
    parser.add_argument("--api-url", help="use this running Prefect server instead of starting one")
    parser.add_argument("--no-shared-limits", action="store_true",
                        help="each command's own bounds only (to see what leasing the server's limits costs)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="rpbench-scale-"))
    work.chmod(0o755)  # PostgreSQL runs as its own user when this runs as root: it must reach its folder
    server, base_url = spawn(args.latency, any_mode=True, cwd=str(ROOT))
    cluster = Cluster(folder=(work / "cluster").resolve())
    results: dict[str, dict[str, float]] = {}
    try:
        cluster.folder.mkdir(parents=True)
        if args.api_url:
            cluster.api_url = args.api_url
        else:
            start_server(cluster, None if args.no_postgres else start_postgres(cluster))
        per_model = max(1, args.in_flight // args.models)
        models = models_file(work, base_url, per_model, args.processes, args.route)
        shared = "0" if args.no_shared_limits else "1"
        env = cluster.env(**{KEY_ENV: "sk-scale", "RPBENCH_PROGRESS_BAR": "0", "RPBENCH_SHARED_LIMITS": shared})
        bound = per_model * args.models / args.latency
        say("prefect_database", "given" if args.api_url else "sqlite" if args.no_postgres else "postgresql")
        say("models", args.models)
        say("litellm_route", args.route)
        say("worker_processes", args.processes)
        say("in_flight_bound", per_model * args.models)
        say("loopback_latency_s", args.latency)
        sizes = ([("burst", args.burst)] if args.burst else []) + \
            ([] if args.no_small else [("small", args.calls // 10)]) + [("big", args.calls)]
        for label, calls in sizes:
            data = make_items(work / f"items-{label}.json", max(1, calls // args.models))
            results[label] = run(label, work, data, models, args.models, args.route, env, bound)
            bare = asyncio.run(bare_client_rate(base_url, per_model * args.models, results[label]["sent"]))
            results[label]["vs_bare"] = results[label]["rate"] * bound / bare
            say(f"{label}_bare_aiohttp_calls_per_s", f"{bare:.1f}")
            say(f"{label}_calls_per_s_vs_bare", f"{results[label]['vs_bare']:.3f}")
            # The same calls over the command's whole wall time (start-up, the check, leases, the report): what a
            # user waits for, where the figure above counts from the first call sent to the last answered.
            command = results[label]["sent"] / results[label]["wall"]
            say(f"{label}_command_calls_per_s_vs_bare", f"{command / bare:.3f}")
            if label == "burst":  # what litellm by itself reaches, for scale: its CPU a call bounds a burst
                sent = int(results[label]["sent"])
                alone = litellm_alone_rate(base_url, args.route, per_model * args.models, sent, 1)
                say("burst_litellm_alone_calls_per_s_vs_bare", f"{alone / bare:.3f}")
                alone = litellm_alone_rate(base_url, args.route, per_model * args.models, sent, args.processes)
                say(f"burst_litellm_alone_{args.processes}_processes_calls_per_s_vs_bare", f"{alone / bare:.3f}")
        if not args.no_dask:
            data = work / "items-big.json"
            results["dask"] = run("dask", work, data, models, args.models, args.route, env, bound, "--runner", "dask",
                                  "--dask-workers", "2")
        if "small" in results:
            big, small = results["big"], results["small"]
            say("rss_growth_big_over_small", f"{big['rss'] / small['rss']:.2f}")
            say("wall_per_call_growth_big_over_small",
                f"{(big['wall'] / big['sent']) / (small['wall'] / small['sent']):.2f}")
        if "dask" in results:
            say("dask_calls_per_s_ratio_of_bound", f"{results['dask']['rate']:.3f}")
        if "burst" in results:
            say("burst_calls_per_s_vs_bare", f"{results['burst']['vs_bare']:.3f}")
        say("calls_per_s_ratio_of_bound", f"{results['big']['rate']:.3f}")
        say("calls_per_s_vs_bare", f"{results['big']['vs_bare']:.3f}")
        return results
    finally:
        cluster.stop()
        server.terminate()
        server.wait(10)
        if os.environ.get("RPBENCH_KEEP") != "1":
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept: {work}", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--alone"]:  # one process of litellm_alone_rate
        url, litellm_route, flight, count, name = sys.argv[2:7]
        litellm_alone(url, litellm_route, int(flight), int(count), name)
    else:
        main()
