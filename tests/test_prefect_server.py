"""Against a real `prefect server start` on loopback that the tests start and stop, with rpbench's deployments
served by `python -m rpbench.deployments.serve`: deployments triggered from code and from `rpbench trigger`,
and a model's limits held together by two flow runs at once."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import CLI, TEST_KEY_ENV, any_mode_responder, headless_chromium, peak_in_flight

# The module's tests share module-scoped fixtures (a server, a trained adapter, a work folder): one worker
# runs them all, so the fixtures are made once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("prefect-server")]
ROOT = Path(__file__).resolve().parent.parent
ZH = ROOT / "samples" / "rolellm" / "rolebench" / "rolebench-zh"
DEPLOYMENT = "rpbench-rolellm-eval/on-demand"
EXAMPLE = ROOT / "samples" / "roleinteract" / "example.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(what: str, ready, procs, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for p in procs:
            assert p.poll() is None, f"{what}: a process exited with {p.returncode}"
        if ready():
            return
        time.sleep(0.5)
    raise AssertionError(f"{what}: not ready after {seconds} s")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def _deployed(env: dict[str, str]) -> bool:
    proc = subprocess.run([sys.executable, "-m", "prefect", "deployment", "ls"], env=env, capture_output=True,
                          text=True, timeout=60)
    return "rpbench-rolellm-eval" in proc.stdout


@pytest.fixture(scope="module")
def served(_server, tmp_path_factory):
    """A Prefect server, the served deployments, and the environment that points at them."""
    folder = tmp_path_factory.mktemp("served")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PREFECT_HOME": str(folder / "prefect"), "PREFECT_API_URL": url, "RPBENCH_SHARED_LIMITS": "1",
           TEST_KEY_ENV: "sk-trigger-test", "RPBENCH_PROGRESS_BAR": "0",
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    logs = (folder / "server.log").open("ab"), (folder / "serve.log").open("ab")
    server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                               str(port)], env=env, stdout=logs[0], stderr=subprocess.STDOUT,
                              start_new_session=True)
    procs = [server]
    try:
        _wait("prefect server", lambda: _healthy(url), procs)
        procs.append(subprocess.Popen([sys.executable, "-m", "rpbench.deployments.serve"], cwd=ROOT, env=env,
                                      stdout=logs[1], stderr=subprocess.STDOUT, start_new_session=True))
        _wait("served deployments", lambda: _deployed(env), procs)
        _server.reset()
        _server.responder = any_mode_responder
        models = folder / "models.toml"
        models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{_server.base_url}"\nschema_rules = "vllm"\napi_key_env = '
                          f'"{TEST_KEY_ENV}"\nstructured = "json_schema"\ntimeout = 5\n')
        yield env, folder, models
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
        _server.reset()


def test_rpbench_trigger_runs_a_deployment_to_completion(served):
    env, folder, models = served
    out = folder / "from-cli"
    proc = subprocess.run([*CLI, "trigger", DEPLOYMENT, "--param", f"data={ZH}", "--param", "models=rolellm-player",
                           "--param", "limit=1", "--param", f"models_file={models}", "--param", f"out={out}",
                           "--param", "resamples=50", "--timeout", "300"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "Completed" in proc.stdout and DEPLOYMENT in proc.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["flow"] == "rolellm-eval" and manifest["rolellm"]["leaderboard"]


def test_the_python_api_starts_a_run_and_can_return_before_it_ends(served):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.utilities.asyncutils import run_coro_as_sync

    from rpbench.deployments.trigger import trigger

    env, folder, models = served
    # This process's Prefect settings were read at import: point them at the test's server for the test.
    with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"]}):
        _start_and_follow(folder, models, get_client, run_coro_as_sync, trigger)


def _start_and_follow(folder, models, get_client, run_coro_as_sync, trigger) -> None:
    run = trigger(DEPLOYMENT, {"data": str(ZH), "models": "rolellm-player", "limit": 1, "models_file": str(models),
                               "out": str(folder / "from-api"), "resamples": 50}, wait=False)
    assert run.state_name in ("Scheduled", "Pending", "Running")
    assert run.parameters["settings"]["models"] == ["rolellm-player"]  # a single value for a list field

    async def final_state() -> str:
        async with get_client() as client:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                flow_run = await client.read_flow_run(run.flow_run_id)
                if flow_run.state and flow_run.state.is_final():
                    return str(flow_run.state.name)
                await asyncio.sleep(1)
            return "still running"

    assert run_coro_as_sync(final_state()) == "Completed"
    assert (folder / "from-api" / "manifest.json").is_file()


@pytest.mark.parametrize(("args", "message"), [
    (["rpbench-nothing/on-demand"], "unknown deployment 'rpbench-nothing/on-demand' (known: "),
    ([DEPLOYMENT, "--param", "colour=blue"], "has no setting 'colour' (known: "),
    ([DEPLOYMENT, "--param", "nothing"], "--param: 'nothing' is not key=value"),
    # Types, model names and paths are checked here, before the run is sent (a worker would fail on them later).
    ([DEPLOYMENT, "--param", "limit=abc", "--param", f"data={ZH}", "--param", "models=rolellm-player"],
     "--param limit: Input should be a valid integer"),
    ([DEPLOYMENT, "--no-wait", "--param", "models=nosuch-model", "--param", f"data={ZH}"],
     "--model: unknown model 'nosuch-model'"),
    ([DEPLOYMENT, "--no-wait", "--param", "models=rolellm-player", "--param", "data=/nonexistent-rolebench"],
     "/nonexistent-rolebench"),
])
def test_bad_triggers_are_one_line(served, args, message):
    env, _, _ = served
    proc = subprocess.run([*CLI, "trigger", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_trigger_with_no_server_is_one_line():
    closed = f"http://127.0.0.1:{_free_port()}/api"
    for url, message in ((closed, f"no Prefect server answers at {closed} (ConnectError"),
                         ("", "PREFECT_API_URL is not set")):
        env = {**os.environ, "PREFECT_API_URL": url}
        proc = subprocess.run([*CLI, "trigger", DEPLOYMENT], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [proc.stderr.strip()], proc.stderr
        assert message in proc.stderr, proc.stderr


@pytest.mark.parametrize("pool", [[], ["--pool", "rpbench-workers"]])
def test_deploy_with_no_server_answering_is_one_line(pool):
    """`rpbench deploy` at a server that is down was Prefect's connection traceback (exit 1)."""
    closed = f"http://127.0.0.1:{_free_port()}/api"
    proc = subprocess.run([*CLI, "deploy", *pool], cwd=ROOT, env={**os.environ, "PREFECT_API_URL": closed},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [proc.stderr.strip()], proc.stderr
    assert f"no Prefect server answers at {closed} (ConnectError" in proc.stderr


def test_a_command_run_against_a_server_of_its_own_does_not_load_prefects_server_to_shut_down():
    """Stopping a temporary server looks for one only where one was started: loading Prefect's server module
    to find none cost every command run against a real server seconds at exit (benchmarks/ measure such costs)."""
    code = ("import sys, prefect.flows; from rpbench.flows.kit.running.environment import shutdown_prefect; "
            "shutdown_prefect(); print('prefect.server.api.server' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stdout + proc.stderr


def test_a_triggered_run_that_fails_exits_1(served, _server):
    env, folder, _ = served
    models = folder / "failing.toml"
    models.write_text(f'[default]\nmodel = "openai/down-for-trigger"\napi_base = "{_server.base_url}"\nschema_rules = "vllm"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\ntimeout = 5\n[retry]\ntransient_attempts = 1\n')
    _server.model_faults["down-for-trigger"] = "500"
    try:
        proc = subprocess.run([*CLI, "trigger", DEPLOYMENT, "--param", f"data={ZH}", "--param", "limit=1",
                               "--param", "models=rolellm-player", "--param", f"models_file={models}", "--param",
                               f"out={folder / 'failing'}", "--param", "resamples=40", "--timeout", "300"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    finally:
        _server.model_faults.pop("down-for-trigger", None)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    assert "Failed" in proc.stdout
    ui = env["PREFECT_API_URL"].removesuffix("/api")
    assert re.search(rf"in the Prefect UI: {re.escape(ui)}/runs/flow-run/[0-9a-f-]{{36}}\n", proc.stdout), proc.stdout
    assert f"run folder: {folder / 'failing'}\n" in proc.stdout
    assert "nothing is picking up" not in proc.stderr  # the served deployment is being picked up


def test_a_trigger_says_when_nothing_picks_the_deployment_up(served):
    """A deployment nobody serves (registered, no worker, no serve process): the run is made and waits; the
    command says why instead of leaving the user with a run that stays Scheduled."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.utilities.asyncutils import run_coro_as_sync

    env, folder, models = served

    async def copy_of_the_served_one(delete: object = None) -> object:
        async with get_client() as client:
            if delete is not None:
                await client.delete_deployment(delete)
                return None
            served_one = await client.read_deployment_by_name(DEPLOYMENT)
            return await client.create_deployment(
                flow_id=served_one.flow_id, name="nobody-serves", parameters=served_one.parameters,
                parameter_openapi_schema=served_one.parameter_openapi_schema)

    with temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}):
        made = run_coro_as_sync(copy_of_the_served_one())
        try:
            proc = subprocess.run([*CLI, "trigger", "rpbench-rolellm-eval/nobody-serves", "--no-wait", "--param",
                                   f"data={ZH}", "--param", "models=rolellm-player", "--param", "limit=1",
                                   "--param", f"models_file={models}", "--param", f"out={folder / 'unserved'}"],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        finally:
            run_coro_as_sync(copy_of_the_served_one(delete=made))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "Scheduled" in proc.stdout
    assert "warning: nothing is picking up rpbench-rolellm-eval/nobody-serves" in proc.stderr, proc.stderr


def _roleinteract_args(models: Path, out: Path, *runner: str) -> list[str]:
    """RoleInteract's example with two models under test: one shard per model."""
    return [*CLI, *runner, "roleinteract", "run", "--data", str(EXAMPLE), "--model", "roleinteract-player",
            "--model", "judge", "--models-file", str(models), "--out", str(out), "--cache", f"{out}.sqlite",
            "--resamples", "50"]


def _two_runs_at_once(folder: Path, env: dict[str, str], models: Path, tag: str, server) -> int:
    server.log.clear()
    runs = [subprocess.Popen(_roleinteract_args(models, folder / f"{tag}-{k}"),
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for k in (1, 2)]
    for p in runs:
        out, _ = p.communicate(timeout=600)
        assert p.returncode == 0, out[-3000:]
    # Both runs asked every item (21 items; the two models are one model string, so a run asks each once).
    assert len(server.log) >= 2 * 21
    return peak_in_flight(server.log)


def _two_at_most(folder: Path, server, model: str, latency: float) -> Path:
    """A models file for ``openai/<model>`` on the loopback server, 2 requests in flight at most."""
    models = folder / f"{model}.toml"
    models.write_text(f'[default]\nmodel = "openai/{model}"\napi_base = "{server.base_url}"\nschema_rules = "vllm"\napi_key_env = '
                      f'"{TEST_KEY_ENV}"\nstructured = "json_schema"\ntimeout = 10\nmax_concurrency = 2\n')
    server.responder = any_mode_responder
    server.latency = latency
    return models


def test_two_runs_sharing_a_key_hold_its_limit_together(served, _server):
    env, folder, _ = served
    # A model of its own: the limit of an endpoint is made once per server, and the trigger tests' runs already
    # made the plain loopback model's with the default max_concurrency.
    models = _two_at_most(folder, _server, "loopback-limited", latency=0.25)
    # Each run alone keeps to 2 in flight; without the server's limit, two runs together send up to 4.
    apart = _two_runs_at_once(folder, {**env, "RPBENCH_SHARED_LIMITS": "0"}, models, "apart", _server)
    assert apart > 2, "the two runs did not overlap: the test shows nothing"
    together = _two_runs_at_once(folder, env, models, "together", _server)
    assert together == 2, together


_LEASING = """
import asyncio, json, sys
from rpbench.flows.kit.scale.leases import all_stats
from rpbench.flows.kit.scale.shared_limits import install_shared_limits
from rpbench.tasks.llm import Request, load_models_config
from rpbench.tasks.llm.gateway import Gateway

install_shared_limits()
gateway = Gateway(load_models_config(sys.argv[1]), cache=None)

async def go():
    try:
        return await gateway.run_all([Request("any", [{"role": "user", "content": f"{sys.argv[2]} {i}"}])
                                      for i in range(96)])
    finally:
        await gateway.aclose()

results = asyncio.run(go())
stats = next(iter(all_stats().values()))
print(json.dumps({"ok": sum(r.ok for r in results), "leases": stats.leases, "taken": stats.taken}))
"""


def test_two_processes_leasing_a_shared_limit_stay_within_it_together(served, _server):
    """Blocks of slots leased from the server (16 in flight: blocks of 2), two processes at once: together
    they never have more than 16 requests in flight, and a request costs no server call of its own."""
    env, folder, _ = served
    models = folder / "leasing.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback-leasing"\napi_base = "{_server.base_url}"\nschema_rules = "vllm"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\ntimeout = 10\nmax_concurrency = 16\n')
    _server.latency = 0.25
    _server.log.clear()
    runs = [subprocess.Popen([sys.executable, "-c", _LEASING, str(models), f"p{k}"], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in (1, 2)]
    said = []
    for p in runs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        said.append(json.loads(out.strip().splitlines()[-1]))
    assert [s["ok"] for s in said] == [96, 96] and [s["taken"] for s in said] == [96, 96]
    assert peak_in_flight(_server.log) == 16
    assert all(s["leases"] <= 96 // 4 for s in said), said  # far fewer server calls than requests


def test_the_scale_benchmark_runs_small(served):
    """benchmarks/scale.py at 1,000 calls through the served Prefect server (the real figures are its own, at
    100,000 calls, in benchmarks/RESULTS.md): every call sent once, every figure printed, the headline last."""
    env, _, _ = served
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scale.py"), "--calls", "1000", "--burst", "300",
                           "--in-flight", "64", "--latency", "0.05", "--no-dask", "--no-small", "--api-url",
                           env["PREFECT_API_URL"]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    lines = [line for line in proc.stdout.splitlines() if "=" in line]
    figures = dict(line.split("=", 1) for line in lines)
    assert figures["big_calls"] == "1000" and figures["in_flight_bound"] == "64"
    assert {"big_peak_rss_mb", "big_call_cache_mb", "big_call_cache_lookup_ms", "big_wall_s"} <= set(figures)
    assert any(k.startswith("big_stage_roleinteract-answers") for k in figures)
    # Each run beside a bare client on the same server, the burst beside litellm alone too; the headline last.
    assert figures["burst_calls"] == "300" and float(figures["burst_bare_aiohttp_calls_per_s"]) > 0
    assert float(figures["burst_litellm_alone_calls_per_s_vs_bare"]) > 0
    assert lines[-1].startswith("calls_per_s_vs_bare=") and float(figures["calls_per_s_vs_bare"]) > 0


def _roleinteract(env: dict[str, str], models: Path, out: Path, *runner: str) -> str:
    proc = subprocess.run(_roleinteract_args(models, out, *runner), cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout + proc.stderr


def test_stage_shards_on_dask_workers_give_the_same_tables_and_keep_the_shared_limit(served, _server):
    """`--runner dask`: each model's shard in a Dask worker process, each with its own gateway; the endpoint's
    limit still holds across them (the server's), and the tables are those of a run on threads."""
    import pyarrow.parquet as pq

    env, folder, _ = served
    models = _two_at_most(folder, _server, "loopback-dask", latency=0.1)
    _roleinteract(env, models, folder / "on-threads")
    _server.log.clear()
    said = _roleinteract(env, models, folder / "on-dask", "--runner", "dask", "--dask-workers", "2")
    assert "Creating a new Dask cluster" in said
    assert json.loads((folder / "on-dask" / "manifest.json").read_text())["this_run"]["runner"] == "dask"
    assert peak_in_flight(_server.log) == 2
    for name in ("answers.parquet", "item_scores.parquet", "leaderboard.parquet"):
        assert (pq.read_table(folder / "on-dask" / name).to_pylist()
                == pq.read_table(folder / "on-threads" / name).to_pylist()), name


def _page_text(browser) -> str:
    return str(browser.execute_script("return document.body.innerText"))


def _until(browser, *texts: str, seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = _page_text(browser)
        if all(t in text for t in texts):
            return text
        time.sleep(0.5)
    raise AssertionError(f"the page never showed {texts}; it shows:\n{_page_text(browser)[-2000:]}")


def _open_tab(browser, label: str) -> None:
    tabs = browser.execute_script("return [...document.querySelectorAll('[role=tab], li.p-tab, button')]"
                                  ".filter(e => e.innerText && e.innerText.trim() === arguments[0])", label)
    visible = [t for t in tabs if t.is_displayed()]
    assert visible, f"no tab named {label}"
    visible[0].click()


def _artifacts(api: str, flow_run_id) -> list:
    """Every artifact a flow run made (its tasks' included)."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    async def read() -> list:
        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))

    with temporary_settings(updates={PREFECT_API_URL: api}):
        return asyncio.run(read())


def test_the_prefect_ui_shows_a_finished_runs_stages_and_results(served):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from rpbench.deployments.trigger import trigger

    env, folder, models = served
    with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"]}):
        run = trigger(DEPLOYMENT, {"data": str(ZH), "models": "rolellm-player", "limit": 1,
                                   "models_file": str(models), "out": str(folder / "for-ui"), "resamples": 50},
                      timeout=300)
    assert run.completed, run.state_name
    ui = env["PREFECT_API_URL"].removesuffix("/api")
    browser = headless_chromium()
    shots = Path(os.environ.get("RPBENCH_TEST_OUTPUT", ROOT / ".test-output"))
    shots.mkdir(parents=True, exist_ok=True)
    try:
        browser.get(f"{ui}/runs/flow-run/{run.flow_run_id}")
        _until(browser, run.flow_run_name, "Completed", "rpbench-rolellm-eval")
        _open_tab(browser, "Task Runs")  # the stages, each a task run
        _until(browser, "rolellm-answers-rolellm-player", "rolellm-report")
        # The run's results, one key per kind of artifact. The tab lists what the server had when it opened and
        # does not refresh: on a loaded machine it once listed only the flow run's own, so it is opened afresh.
        for attempt in range(3):
            if attempt:
                browser.get(f"{ui}/runs/flow-run/{run.flow_run_id}")
                _until(browser, run.flow_run_name, "Completed")
            _open_tab(browser, "Artifacts")
            try:
                _until(browser, "run-summary-rolellm-eval", "rolellm-leaderboard", "stage-rolellm-report",
                       seconds=30)
                break
            except AssertionError:
                if attempt == 2:
                    raise
        time.sleep(1)  # let the run's timeline finish drawing before the picture
        browser.save_screenshot(str(shots / "prefect-ui-flow-run.png"))
        made = _artifacts(env["PREFECT_API_URL"], run.flow_run_id)
        kinds: dict[str, set[str]] = {}
        for a in made:
            kinds.setdefault(a.key, set()).add(a.type)
        assert all(len(types) == 1 for types in kinds.values()), kinds  # a key names one kind of artifact
        assert kinds["rolellm-report"] == {"markdown"} and kinds["stage-rolellm-report"] == {"table"}
        # The run summary links the report by its absolute file:// address and names the run folder.
        summary = next(a for a in made if a.key == "run-summary-rolellm-eval")
        browser.get(f"{ui}/artifacts/artifact/{summary.id}")
        _until(browser, "Run folder", str((folder / "for-ui").resolve()))
        report = (folder / "for-ui" / "report.html").resolve().as_uri()
        links = browser.execute_script("return [...document.querySelectorAll('a')].map(a => a.href)")
        assert report in links, links
    finally:
        browser.quit()
    assert (shots / "prefect-ui-flow-run.png").stat().st_size > 10_000


def test_the_suite_is_a_deployment_whose_profile_is_an_artifact(served):
    """The suite triggered like any flow (here on RoleInteract alone): it finishes, its modes run as subflows,
    and its profile is a Markdown artifact of the run beside its run summary."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from rpbench.deployments.trigger import trigger

    env, folder, models = served
    out = folder / "suite"
    with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"]}):
        run = trigger("rpbench-suite/on-demand", {"models": ["roleinteract-player", "judge"],
                                                  "only": ["roleinteract"], "models_file": str(models),
                                                  "out": str(out), "resamples": 50}, timeout=300)
    assert run.completed, run.state_name
    kinds = {a.key: a.type for a in _artifacts(env["PREFECT_API_URL"], run.flow_run_id)}
    assert kinds.get("suite-profile") == "markdown" and kinds.get("run-summary-suite") == "markdown", kinds
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["suite"]["modes"]["roleinteract"]["status"] == "ok"
    assert (out / "roleinteract" / "report.html").is_file() and (out / "report.html").is_file()
