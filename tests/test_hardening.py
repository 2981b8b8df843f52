"""Every registered mode's flows, run as a user runs them (the CLI, in its own process group), against the
loopback server: killed with SIGKILL at random points and started again, and run with a fifth of all
requests failing. The modes come from the registry, so a mode added later is covered by registering it
with a smoke scenario (``BenchmarkMode.smoke``).
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rpbench.flows.kit.front.registry import SmokeStep, modes
from tests.helpers import CLI, any_mode_responder

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
KEY_ENV = "LOOPBACK_AUTH"  # named like nothing secret: only api_key_env says it holds a key
FAKE_KEY = "rpbench-fake-key-Zq7Wm3Xk9Pd2"
# Columns that say when or how fast, not what: they differ between any two runs.
VOLATILE = {"call_id", "started_at", "latency_s", "seconds", "cached", "transient_retries"}
MODES = sorted(modes())
# Seeds of random kill points per mode. CI runs one per mode, a different one for each mode (five modes at three
# seeds each took most of CI's time budget); RPBENCH_CRASH_SEEDS=3 runs three per mode, a deeper check.
CRASH_SEEDS = int(os.environ.get("RPBENCH_CRASH_SEEDS", "1"))


def _models_file(work: Path, server, timeout: float = 5.0) -> Path:
    path = work / "models.toml"
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{server.base_url}"\nschema_rules = "vllm"\n'
                    f'api_key_env = "{KEY_ENV}"\nstructured = "json_schema"\ntimeout = {timeout}\n'
                    '[retry]\ntransient_attempts = 4\nbackoff_initial = 0.05\nbackoff_max = 0.2\n')
    return path


def _argv(step: SmokeStep, models: Path, cache: Path) -> list[str]:
    extra = ["--models-file", str(models), "--cache", str(cache)] if step.uses_models else []
    return [*CLI, *step.args, *extra]


# The module's Prefect server (see ``prefect_api``): commands talk to it instead of each starting a temporary
# server of its own (which would be most of each command's time). One test keeps the temporary server, and checks
# that a killed command leaves none of it behind.
_API: list[str] = []


def _env(prefect_home: Path, temporary_server: bool = False) -> dict[str, str]:
    env = {**os.environ, KEY_ENV: FAKE_KEY, "PREFECT_HOME": str(prefect_home), "RPBENCH_PROGRESS_BAR": "0",
           "RPBENCH_SHARED_LIMITS": "0"}
    if _API and not temporary_server:
        env["PREFECT_API_URL"] = _API[0]
    else:
        env.pop("PREFECT_API_URL", None)
    return env


@pytest.fixture(scope="module", autouse=True)
def prefect_api(tmp_path_factory):
    """One `prefect server start` for the module's commands."""
    from rpbench.deployments.cluster import Cluster, start_server

    cluster = Cluster(tmp_path_factory.mktemp("prefect-server"))
    try:
        _API[:] = [start_server(cluster, None)]
        yield _API[0]
    finally:
        _API.clear()
        cluster.stop()


def _start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    fh = log.open("ab")
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)


def _run_to_end(argv: list[str], env: dict[str, str], log: Path, codes: tuple[int, ...] = (0,)) -> float:
    started = time.monotonic()
    proc = _start(argv, env, log)
    code = proc.wait(timeout=600)
    assert code in codes, f"{argv[3:6]} exited {code}:\n{log.read_text(errors='replace')[-3000:]}"
    _last_code[0] = code
    return time.monotonic() - started


_last_code = [0]


def _expected_outcome(out: Path, code: int, limit: float = 0.1) -> None:
    """The exit code a run must give, worked out from its published tables: 3 when a model lost more than
    ``limit`` of its items or a stage got no usable reply to any call, 0 otherwise."""
    from rpbench.flows.kit.running.stage import slug

    failures = pq.read_table(out / "failures.parquet").to_pylist() if (out / "failures.parquet").is_file() else []
    failed = Counter(m for m, _ in {(f["model"], f["item_id"]) for f in failures if not f["scored"]})
    board = out / "leaderboard.parquet"
    scored = {r["model"]: r["n"] for r in pq.read_table(board).to_pylist()} if board.is_file() else {}
    too_many = [m for m in failed if failed[m] / (failed[m] + scored.get(m, 0)) > limit]
    manifest = json.loads((out / "manifest.json").read_text())
    outcome = manifest["outcome"]
    assert (code == 3) == (outcome["status"] == "failed"), (code, outcome)
    named = {r.split(":")[0].removeprefix("model ") for r in outcome["reasons"] if r.startswith("model ")}
    assert named == set(too_many), (too_many, outcome["reasons"])
    for reason in outcome["reasons"]:
        if reason.startswith("stage "):  # the stage's own calls table: every call failed
            label = reason.removeprefix("stage ").split(": ")[0]
            calls = pq.read_table(out / "calls" / f"{slug(label)}.parquet").to_pylist()
            assert calls and all(c["outcome"] != "ok" for c in calls), reason


def _tables(folder: Path) -> dict[str, list[dict]]:
    """The folder's published tables (not its call accounting), without the columns that say when."""
    out = {}
    for path in sorted(folder.glob("*.parquet")):
        if path.stem == "calls":
            continue
        rows = pq.read_table(path).to_pylist()
        # NaN (an undefined rate) is not equal to itself; as text it compares like any value.
        out[path.stem] = [{k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()
                           if k not in VOLATILE} for row in rows]
    return out


def _stray_prefect(prefect_home: Path) -> list[int]:
    """Processes still running with this PREFECT_HOME in their environment (a server a killed command left)."""
    found = []
    needle = f"PREFECT_HOME={prefect_home}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _scenario(mode: str, work: Path) -> list[SmokeStep]:
    steps = modes()[mode].smoke_steps(work)
    assert steps, f"mode {mode} registers no smoke scenario, so nothing can harden it"
    return steps


@pytest.fixture
def server(loopback):
    loopback.responder = any_mode_responder
    return loopback


@pytest.mark.parametrize("mode", MODES)
def test_killed_at_random_points_and_resumed_equals_an_uninterrupted_run(mode, server, tmp_path):
    reference = tmp_path / "reference"
    reference.mkdir()
    models = _models_file(tmp_path, server)
    durations, requests = {}, {}
    for step in _scenario(mode, reference):
        before = len(server.log)
        durations[step.name] = _run_to_end(_argv(step, models, reference / "calls.sqlite"),
                                           _env(reference / "prefect"), reference / "log.txt")
        requests[step.name] = len(server.log) - before
    expected = {step.name: _tables(step.out) for step in _scenario(mode, reference)}
    reference_sent = Counter(e["digest"] for e in server.log if e.get("ok"))

    # Everything again, into the same folders with the same call cache but a new Prefect home (so no stage is
    # cached): every call comes from the call cache, and the tables are the same.
    server.log.clear()
    for step in _scenario(mode, reference):
        # The first run paid for compiling and loading modules; this one is what a step takes once warm.
        warm = _run_to_end(_argv(step, models, reference / "calls.sqlite"), _env(reference / "prefect-again"),
                           reference / "log.txt")
        durations[step.name] = min(durations[step.name], warm)
    assert not server.log, f"a second run with the same call cache sent {len(server.log)} requests"
    assert {step.name: _tables(step.out) for step in _scenario(mode, reference)} == expected

    first = 1 + 10 * MODES.index(mode)
    for seed in range(first, first + CRASH_SEEDS):
        server.log.clear()
        rng = random.Random(seed)
        work = tmp_path / f"killed-{seed}"
        work.mkdir()
        home, cache, log = work / "prefect", work / "calls.sqlite", work / "log.txt"
        at_risk: Counter[str] = Counter()  # requests answered just before a kill: the client may not have kept them
        kills = 0
        kill_times: list[tuple[str, float]] = []
        for step in _scenario(mode, work):
            if step.uses_models:
                # Two kills: the first anywhere from start-up to near the end of an uninterrupted run of this
                # step; the second once the resumed attempt has had a random share of the replies still to come
                # (with replies this fast, most of a resumed attempt's time is start-up, which a kill by the
                # clock would mostly hit).
                for kill in range(2):
                    before = len(server.log)
                    proc = _start(_argv(step, models, cache), _env(home), log)
                    left = requests[step.name] - sum(1 for e in server.log if e.get("step") == step.name)
                    if kill == 0 or left < 2:
                        # By the clock, but before the last reply: on a busy machine the step's uninterrupted
                        # time can overstate this attempt's, and a kill after its end would interrupt nothing.
                        wake = time.monotonic() + rng.uniform(0.5, max(1.0, 0.9 * durations[step.name]))
                        while time.monotonic() < wake and proc.poll() is None \
                                and (left < 2 or len(server.log) - before < left - 1):
                            time.sleep(0.01)
                    else:
                        target, deadline = rng.randint(1, left - 1), time.monotonic() + durations[step.name] + 60
                        while len(server.log) - before < target and proc.poll() is None \
                                and time.monotonic() < deadline:
                            time.sleep(0.01)
                    for e in server.log[before:]:
                        e["step"] = step.name
                    if proc.poll() is not None:
                        break  # it finished first: the step is done, and a later kill would interrupt nothing
                    os.killpg(proc.pid, signal.SIGKILL)
                    killed_at = time.time()
                    kill_times.append((step.name, killed_at))
                    kills += 1
                    proc.wait()
                    # Requests in flight at the kill are settled first: on a busy machine the server may not
                    # have read one's body (its digest) until after the kill, and then answers a dead client.
                    settle = time.monotonic() + 10
                    while any("answered" not in e for e in server.log[before:]) and time.monotonic() < settle:
                        time.sleep(0.05)
                    at_risk.update(e["digest"] for e in server.log
                                   if "digest" in e and e.get("answered", math.inf) > killed_at - 2.0)
                    # Nor do a killed command's own processes (gateway workers) outlive it for long.
                    deadline = time.monotonic() + 60
                    while _stray_prefect(home) and time.monotonic() < deadline:
                        time.sleep(1)
                    assert not _stray_prefect(home), f"{step.name}: Prefect processes outlived a killed command"
            _run_to_end(_argv(step, models, cache), _env(home), log)
        # At least one kill interrupted a step. (A second may come too late: when the first came after the last
        # reply, the resumed attempt has nothing left to send, and on a busy machine it can end before a kill
        # timed by the clock.)
        assert kills >= 1, f"seed {seed}: the kills all came too late to interrupt anything"

        # Same rows, none missing, none repeated.
        assert {step.name: _tables(step.out) for step in _scenario(mode, work)} == expected, f"seed {seed}"
        # No request the server answered well (and the client had time to keep) was sent again.
        sent = Counter(e["digest"] for e in server.log if e.get("ok"))
        repeated = {d: n for d, n in sent.items() if n > reference_sent.get(d, 0) + at_risk.get(d, 0)}
        assert not repeated, f"seed {seed}: {len(repeated)} completed requests were sent again:\n" + \
            _when_sent(server.log, repeated, kill_times, reference_sent)
        # The calls of killed attempts are still in the accounting: every request answered is recorded.
        folders = {step.out for step in _scenario(mode, work)}  # steps may share one (a rejudge of a run)
        calls = sum(pq.read_metadata(p).num_rows for f in folders for p in [f / "calls.parquet"] if p.is_file())
        recorded_sent = sum(json.loads((f / "manifest.json").read_text())["totals"]["calls_sent"]
                            for f in folders if (f / "manifest.json").is_file())
        assert calls >= recorded_sent
        assert recorded_sent >= sum(sent.values()) - sum(at_risk.values()), (recorded_sent, sum(sent.values()))


def _when_sent(log: list[dict], digests: dict[str, int], kills: list[tuple[str, float]],
               reference: Counter[str]) -> str:
    """For a failing crash test: when each of (up to four of) ``digests`` was sent and answered, in seconds
    after the first kill, beside the kills' own times."""
    origin = kills[0][1] if kills else 0.0
    lines = [f"kills: {[(name, round(t - origin, 2)) for name, t in kills]}"]
    for digest in list(digests)[:4]:
        sends = [(e.get("step", "resumed"), round(e["started"] - origin, 2),
                  round(e["answered"] - origin, 2) if "answered" in e else None)
                 for e in log if e.get("digest") == digest]
        asks = next(e.get("asks") for e in log if e.get("digest") == digest)
        lines.append(f"{asks} (uninterrupted run: {reference.get(digest, 0)}): {sends}")
    return "\n".join(lines)


def _accounting_matches(folder: Path) -> None:
    """The manifest's totals and row counts say what the tables hold."""
    manifest = json.loads((folder / "manifest.json").read_text())
    for name, rows in manifest["row_counts"].items():
        assert pq.read_metadata(folder / f"{name}.parquet").num_rows == rows, (folder, name)
    calls = pq.read_table(folder / "calls.parquet").to_pylist() if (folder / "calls.parquet").is_file() else []
    totals = manifest["totals"]
    assert totals["calls"] == len(calls), folder
    assert totals["calls_sent"] == sum(not c["cached"] for c in calls), folder
    assert totals["failed"] == sum(c["outcome"] == "failed" for c in calls), folder
    assert totals["parse_errors"] == sum(c["outcome"] == "parse_error" for c in calls), folder
    assert all(c["error"] for c in calls if c["outcome"] != "ok"), f"{folder}: a failed call without its reason"


def _failures_have_reasons(folder: Path) -> None:
    """A row that failed says why, and carries no score: nothing unparsed became a number."""
    for path in folder.glob("*.parquet"):
        for row in pq.read_table(path).to_pylist():
            if row.get("status") == "failed":
                assert "error" not in row or row["error"], f"{path.name}: failed row without its reason: {row}"
                scores = {k: v for k, v in row.items() if k in ("sigma", "score", "answer", "text") and v is not None}
                assert not scores, f"{path.name}: a failed row carries a result: {row}"
            if path.stem == "failures":
                assert row["kind"], f"{path.name}: failure without a kind: {row}"


def _furina_items_accounted_for(work: Path) -> None:
    """Every item and model is scored, or recorded as failed; every score comes from two parsed judgments."""
    items = pq.read_table(work / "bench" / "items.parquet").column("item_id").to_pylist()
    scores = pq.read_table(work / "eval" / "item_scores.parquet").to_pylist()
    failures = pq.read_table(work / "eval" / "failures.parquet").to_pylist()
    judgments = {(j["item_id"], j["model"], j["order"]): j
                 for j in pq.read_table(work / "eval" / "judgments.parquet").to_pylist()}
    assert items, "the benchmark has no items: nothing was evaluated"
    for model in ("test", "source"):
        for item in items:
            scored = [s for s in scores if (s["item_id"], s["model"]) == (item, model)]
            failed = [f for f in failures if (f["item_id"], f["model"]) == (item, model) and not f["scored"]]
            assert scored or failed, f"{item} of {model}: neither scored nor recorded as failed"
            for s in scored:
                if s["answered"]:
                    pair = (judgments[(item, model, 1)], judgments[(item, model, 2)])
                    assert all(j["status"] == "ok" for j in pair), f"{item} of {model}: scored from a failed judgment"
                    assert (s["sigma1"], s["sigma2"]) == (pair[0]["sigma"], pair[1]["sigma"])


@pytest.mark.parametrize("mode", MODES)
def test_a_fifth_of_requests_failing_loses_nothing_untraced_and_no_key_is_written(mode, server, tmp_path):
    # No 401 in the mix: a refused key stops a run at once (below, after the scenario).
    server.random_faults(0.2, ("429", "500", "timeout", "malformed", "truncated", "empty"), seed=7)
    server.timeout_sleep = 5.0
    work = tmp_path / "work"
    work.mkdir()
    models = _models_file(tmp_path, server, timeout=2.0)
    log = tmp_path / "log.txt"
    steps = _scenario(mode, work)
    codes = {}
    for step in steps:
        # A run past the failure threshold writes everything and exits 3; below it, 0.
        _run_to_end(_argv(step, models, work / "calls.sqlite"), _env(work / "prefect"), log, codes=(0, 3))
        codes[step.name] = _last_code[0]
        if (step.out / "manifest.json").is_file():
            _expected_outcome(step.out, codes[step.name])
    faults = Counter(e.get("fault") for e in server.log)
    assert all(faults[kind] for kind in ("429", "500", "malformed", "truncated", "empty")), faults

    # The key refused (the server echoes it back in its error): the run stops at its first reply, exit 3, one
    # line naming the model and the key's variable, and the key written nowhere (checked below).
    server.random_faults(0.0)
    server.model_faults["loopback"] = "401"
    first = next(step for step in steps if step.uses_models)
    before = len(server.requests)
    _run_to_end(_argv(first, models, work / "fresh-calls.sqlite"), _env(work / "prefect-401"), log, codes=(3,))
    assert "cannot be used: AuthenticationError" in log.read_text() and f"read from {KEY_ENV}" in log.read_text()
    assert 1 <= len(server.requests) - before <= 16, "a refused key was retried or the run went on sending"
    server.model_faults.clear()

    for step in steps:
        if (step.out / "manifest.json").is_file():
            _accounting_matches(step.out)
        _failures_have_reasons(step.out)
    if mode == "furina":
        _furina_items_accounted_for(work)

    # The key reached the server (and came back in 401 errors), but no file, log or artifact holds it.
    assert any(FAKE_KEY in h for h in server.auth_headers)
    leaks = [str(p) for p in tmp_path.rglob("*") if p.is_file() and FAKE_KEY.encode() in p.read_bytes()]
    assert not leaks, f"the key was written to {leaks}"


def test_a_run_that_dies_midway_leaves_the_previous_outputs_whole(server, tmp_path):
    """The outputs of a run are published together at its end, or not at all."""
    from tests.test_flows import _bench

    server.latency = 0.3  # slow enough to be killed with a stage done and others under way
    bench = _bench(tmp_path)
    models, cache, home = _models_file(tmp_path, server), tmp_path / "calls.sqlite", tmp_path / "prefect"
    out, log = tmp_path / "eval", tmp_path / "log.txt"
    base = [*CLI, "eval", "--bench", str(bench), "--out", str(out), "--models-file", str(models), "--cache", str(cache)]
    _run_to_end([*base, "--model", "judge"], _env(home, temporary_server=True), log)

    def published() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}

    before = published()
    assert {"item_scores.parquet", "judgments.parquet", "manifest.json", "report.html"} <= set(before)
    launched = time.time()
    proc = _start([*base, "--model", "openai/another-model", "--model", "source"], _env(home, temporary_server=True),
                  log)
    deadline = time.monotonic() + 120

    def final_tables_written() -> bool:
        # The moment the new run's combined item scores exist anywhere in the folder: its last stage is
        # writing its outputs, and the manifest and report are still to come.
        return any(p.stat().st_mtime > launched for p in out.rglob("item_scores.parquet")
                   if p.parent.name in ("eval", "_final"))

    while not final_tables_written():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # The killed command's temporary Prefect server does not outlive it for long.
    deadline = time.monotonic() + 60
    while _stray_prefect(home) and time.monotonic() < deadline:
        time.sleep(1)
    assert not _stray_prefect(home), "Prefect processes outlived a killed command"
    after = published()
    if after != before:
        # Killed after the whole set was published: then every output is the new run's.
        manifest = json.loads(after["manifest.json"])
        scored = set(pq.read_table(out / "item_scores.parquet").column("model").to_pylist())
        assert manifest["evaluation"]["models"] == ["openai/another-model", "source"] and scored == {
            "openai/another-model", "source"}, "the folder mixes two runs' outputs"
        for name, rows in manifest["row_counts"].items():
            assert pq.read_metadata(out / f"{name}.parquet").num_rows == rows, name
