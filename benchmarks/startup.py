"""How fast the command line answers: `rpbench --help`, `rpbench modes` and an input error, against what
importing the heavy libraries alone costs (what every command paid when registering a mode imported all of it);
and how soon a small run starts working and ends once its work is done.

The small run is issue 80's: `rpbench roleinteract run` on 20 released SocialBench items (the shipped sample
when ../shared/data is absent) against the loopback server in this process, which records when each request
arrives. It runs on Prefect's temporary server (no server configured, as a newcomer runs it) and with a Prefect
server configured (PREFECT_API_URL, a server this script starts first). Printed: the seconds from the command's
start to its first request, from its last answer to its exit, and the whole.

Each command runs as a fresh process, as a user types it, three times; the median is printed. The headline
is the input error's time as a share of the heavy imports' time in the same run (lower is better: under 1, a
user's typo is answered before litellm and Prefect could even have loaded).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.loopback import LoopbackServer  # noqa: E402

RUNS = 3
RPBENCH = [sys.executable, "-m", "rpbench.flows.cli.main"]
# What the command line imported before any command ran, when registering a mode imported all of it.
HEAVY = "import litellm, prefect, prefect.flows, rouge_score.rouge_scorer, scipy.stats, pyarrow.parquet"


def seconds(argv: list[str]) -> float:
    """Median wall time of ``argv`` over RUNS fresh processes (output discarded)."""
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, capture_output=True, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


RELEASED = ROOT.parent / "shared" / "data" / "socialbench" / "emotional_perception.json"
SAMPLE = ROOT / "samples" / "roleinteract" / "example.json"
LATENCY_S = 1.0  # a hosted model's reply takes about a second: the run waits, as a real one does


def small_run(loopback: LoopbackServer, work: Path, name: str, env: dict[str, str]) -> dict[str, float]:
    """One fresh `rpbench roleinteract run` of 20 items: first request, last answer and exit, in seconds from
    the command's start (median of RUNS runs, each in a new folder and call cache, so every call is sent)."""
    models = work / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\n'
                      'api_key_env = "LOOP_KEY"\n', encoding="utf-8")
    data = RELEASED if RELEASED.is_file() else SAMPLE
    found: dict[str, list[float]] = {"first_request_s": [], "after_last_answer_s": [], "wall_s": []}
    for k in range(RUNS):
        out = work / f"{name}-{k}"
        loopback.log.clear()
        started = time.time()  # the loopback server's clock
        ran = subprocess.run([*RPBENCH, "roleinteract", "run", "--data", str(data), "--drop-unanswerable",
                              "--limit", "20", "--model", "hosted_vllm/t", "--models-file", str(models),
                              "--out", str(out), "--cache", str(out / "calls.sqlite")],
                             cwd=work, capture_output=True, text=True, env={**env, "LOOP_KEY": "k"}, check=False)
        ended = time.time()
        if ran.returncode != 0 or not loopback.log:
            raise SystemExit(f"the small run failed ({ran.returncode}): {ran.stderr[-2000:]}")
        found["first_request_s"].append(min(e["started"] for e in loopback.log) - started)
        found["after_last_answer_s"].append(ended - max(e["answered"] for e in loopback.log))
        found["wall_s"].append(ended - started)
    return {key: statistics.median(values) for key, values in found.items()}


def prefect_server(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A Prefect server of its own (what PREFECT_API_URL names when a user has one), once it answers."""
    import socket

    import prefect

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--app-dir", str(Path(prefect.__file__).parent.parent), "--factory",
         "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port), "--log-level",
         "error"], env={**os.environ, "PREFECT_HOME": str(home), "PREFECT_UI_ENABLED": "0"})
    url = f"http://127.0.0.1:{port}/api"
    for _ in range(1200):
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit("the Prefect server did not start")


def main() -> None:
    out = tempfile.mkdtemp(prefix="rpbench-startup-")
    work = Path(out)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PREFECT_HOME"] = str(work / "prefect-home")
    if (ROOT.parent / "shared" / "releases").is_dir():  # SocialBench's prompts, read from its release
        env.setdefault("RPBENCH_RELEASES", str(ROOT.parent / "shared" / "releases"))
    loopback = LoopbackServer(latency=LATENCY_S).start()
    temporary = small_run(loopback, work, "temporary", env)
    server, url = prefect_server(work / "server-home")
    try:
        configured = small_run(loopback, work, "configured", {**env, "PREFECT_API_URL": url})
    finally:
        server.terminate()
        loopback.stop()
    python = seconds([sys.executable, "-c", "pass"])
    heavy = seconds([sys.executable, "-c", HEAVY])
    help_s = seconds([*RPBENCH, "--help"])
    modes_s = seconds([*RPBENCH, "modes"])
    error_s = seconds([*RPBENCH, "eval", "--bench", f"{out}/MISSING", "--model", "local-greedy", "--out", out])
    mode_help_s = seconds([*RPBENCH, "roleinteract", "run", "--help"])
    print(f"runs_per_figure={RUNS}")
    print(f"python_start_s={python:.2f}")
    print(f"heavy_imports_s={heavy:.2f}")
    print(f"help_s={help_s:.2f}")
    print(f"modes_s={modes_s:.2f}")
    print(f"mode_command_help_s={mode_help_s:.2f}")
    print(f"eval_missing_bench_error_s={error_s:.2f}")
    for name, figures in (("temporary_server", temporary), ("prefect_server", configured)):
        for key, value in figures.items():
            print(f"small_run_{name}_{key}={value:.2f}")
    print(f"help_ratio_of_heavy_imports={help_s / heavy:.3f}")
    print(f"input_error_ratio_of_heavy_imports={error_s / heavy:.3f}")


if __name__ == "__main__":
    main()
