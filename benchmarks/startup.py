"""How fast the command line answers: `rpbench --help`, `rpbench modes` and an input error, against what
importing the heavy libraries alone costs (what every command paid when registering a mode imported all of it);
and how soon a small run starts working and ends once its work is done.

The small run is issue 80's: `rpbench roleinteract run` on 20 released SocialBench items (the shipped sample
when ../shared/data is absent) against the loopback server in this process, which records when each request
arrives. It runs on Prefect's temporary server (no server configured, as a newcomer runs it) and with a Prefect
server configured (PREFECT_API_URL, a server this script starts first). Printed: the seconds from the command's
start to its first request, from its last answer to its exit, and the whole; and where the time goes, from the
lines the run logs (each stamped to the millisecond): the temporary server answering, the flow run beginning,
its first stage starting, its last stage done, the flow run done. Beside them, the floors no run can go below,
each in a fresh process: importing litellm (every request goes through it), importing Prefect (every run is a
flow of it), and Prefect's temporary server answering its first request.

Each command runs as a fresh process, as a user types it, three times; the median is printed. The headline
is the input error's time as a share of the heavy imports' time in the same run (lower is better: under 1, a
user's typo is answered before litellm and Prefect could even have loaded).
"""

from __future__ import annotations

import datetime
import itertools
import os
import re
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


def seconds(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Median wall time of ``argv`` over RUNS fresh processes (output discarded)."""
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, capture_output=True, check=False, env=env)
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
    phases: dict[str, list[float]] = {}
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
        first, last = min(e["started"] for e in loopback.log), max(e["answered"] for e in loopback.log)
        found["first_request_s"].append(first - started)
        found["after_last_answer_s"].append(ended - last)
        found["wall_s"].append(ended - started)
        marks = {"command_start": started, **logged_marks(ran.stderr + ran.stdout, started),
                 "first_request": first, "last_answer": last, "exit": ended}
        ordered = sorted(marks.items(), key=lambda kv: kv[1])
        for (since, a), (until, b) in itertools.pairwise(ordered):
            phases.setdefault(f"phase_{since}_to_{until}_s", []).append(b - a)
    figures = {key: statistics.median(values) for key, values in found.items()}
    figures |= {key: statistics.median(values) for key, values in phases.items() if len(values) == RUNS}
    return figures


# What the run logs as it goes, each line stamped with the time of day to the millisecond (Prefect's format).
MARKS = {"server_answers": re.compile(r"Prefect: a temporary server on"),
         "flow_begins": re.compile(r"Beginning flow run"),
         "first_stage_starts": re.compile(r"Task run .*: started$"),
         "last_stage_done": re.compile(r"Task run .* - Finished in state"),
         "flow_done": re.compile(r"Flow run .* - Finished in state")}
STAMP = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d\d\d) \|")


def logged_marks(log: str, started: float) -> dict[str, float]:
    """When each of MARKS was first logged (the last stage's and the flow's: last), in the clock of ``started``."""
    midnight = datetime.datetime.fromtimestamp(started).replace(hour=0, minute=0, second=0, microsecond=0)
    marks: dict[str, float] = {}
    for line in log.splitlines():
        stamp = STAMP.match(line)
        if stamp is None:
            continue
        h, m, sec, ms = (int(g) for g in stamp.groups())
        at = midnight.timestamp() + h * 3600 + m * 60 + sec + ms / 1000
        at += 86400 if at < started - 60 else 0  # a run across midnight
        for name, pattern in MARKS.items():
            if pattern.search(line) and (name not in marks or name in ("last_stage_done", "flow_done")):
                marks[name] = at
    return marks


def prefect_server(home: Path, **env: str) -> tuple[subprocess.Popen[bytes], str]:
    """A Prefect server of its own (what PREFECT_API_URL names when a user has one), once it answers; ``env``:
    more of its environment."""
    import socket

    import prefect

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--app-dir", str(Path(prefect.__file__).parent.parent), "--factory",
         "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port), "--log-level",
         "error"], env={**os.environ, "PREFECT_HOME": str(home), "PREFECT_UI_ENABLED": "0", **env})
    url = f"http://127.0.0.1:{port}/api"
    for _ in range(1200):
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit("the Prefect server did not start")


def temporary_server_answers(home: Path) -> float:
    """Seconds from launching Prefect's temporary server (as a command launches it) to its first answer, on a
    machine doing nothing else; its database made first, as a command finds it after its first run."""
    # As the command launches it (flows.kit.running.environment.launch_temporary_server).
    ephemeral = {"PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
    process, _ = prefect_server(home, **ephemeral)  # the first start creates the database
    process.terminate()
    process.wait()
    started = time.perf_counter()
    process, _ = prefect_server(home, **ephemeral)
    took = time.perf_counter() - started
    process.terminate()
    process.wait()
    return took


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
    offline = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # as rpbench imports it: no price download
    # Together in one process, as a run imports them (what they share, pydantic and httpx, counted once).
    imports_s = seconds([sys.executable, "-c", "import litellm, litellm.main, prefect, prefect.flows"], env=offline)
    server_s = statistics.median(temporary_server_answers(work / f"server-{k}") for k in range(RUNS))
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
    print(f"floor_import_litellm_and_prefect_s={imports_s:.2f}")
    print(f"floor_temporary_server_answers_s={server_s:.2f}")
    for name, figures in (("temporary_server", temporary), ("prefect_server", configured)):
        for key, value in figures.items():
            print(f"small_run_{name}_{key}={value:.2f}")
    # What a first request cannot come before: litellm (its request code, litellm.main, included) and Prefect
    # imported, one interpreter lock doing both; on the temporary server, also that server answering (it boots
    # on the other core meanwhile).
    print(f"small_run_prefect_server_first_request_over_floor_s={configured['first_request_s'] - imports_s:.2f}")
    print(f"small_run_temporary_server_first_request_over_floor_s="
          f"{temporary['first_request_s'] - max(imports_s, server_s):.2f}")
    print(f"help_ratio_of_heavy_imports={help_s / heavy:.3f}")
    print(f"input_error_ratio_of_heavy_imports={error_s / heavy:.3f}")


if __name__ == "__main__":
    main()
