"""A run's modes (a plan, a budget, --batch) travel with the run, not with the process: two runs in one process at
once each keep their own, and a gateway made where the run's context was lost is refused while a plan counts."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import threading

import pytest

from rpbench.flows.kit.front.settings import RunSettings
from rpbench.tasks.llm.budget import Budget
from rpbench.tasks.llm.planning import CallPlan
from rpbench.tasks.llm.run_context import OutsideTheRun, RunContext, current_run, within


async def _ask(fork, words: str):
    """One request through ``fork``, its HTTP session closed on the loop that opened it."""
    try:
        return await fork.complete("actor", [{"role": "user", "content": words}])
    finally:
        await fork.aclose()


def _in_thread(fn, *, keep_context: bool):
    """Run ``fn`` in a new thread (with a copy of this context, as Prefect starts task threads, or without);
    its result or its exception."""
    out: dict[str, object] = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed back to the test
            out["error"] = exc

    run = contextvars.copy_context().run if keep_context else (lambda f: f())
    thread = threading.Thread(target=run, args=(target,))
    thread.start()
    thread.join(30)
    return out


def test_a_plan_and_a_real_run_at_once_in_one_process_each_answer_to_their_own(make_gateway, loopback):
    """A plan counted in one thread while a real run sends in another: when the plan was a switch for the
    whole process, whichever started last decided for both. Here the plan's request is counted and never
    sent, the run's is sent and answered, at the same moment."""
    root = make_gateway()
    loopback.latency = 0.3  # both requests are in flight together
    both_in = threading.Barrier(2, timeout=20)
    counted = CallPlan()

    def stage(context: RunContext, words: str):
        with within(context):
            fork = root.fork()
            both_in.wait()
            return asyncio.run(_ask(fork, words))

    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # (its threads start without this context)
        planned = pool.submit(stage, RunContext(plan=counted), "planned")
        sent = pool.submit(stage, RunContext(budget=Budget()), "sent")
        planned_reply, sent_reply = planned.result(60), sent.result(60)
    [request] = loopback.requests
    assert request["messages"][-1]["content"] == "sent"  # only the real run's request reached the server
    assert sent_reply.ok and not sent_reply.cached
    assert planned_reply.ok and counted.counted() == 1  # the plan's was answered by a stand-in, and counted
    assert current_run() == RunContext()  # nothing leaked into this thread


def test_each_run_spends_from_its_own_budget(make_gateway, loopback):
    """Two runs in one process: one reaches its budget, and the other, with a budget of its own, goes on."""
    from rpbench.tasks.llm.budget import BudgetReached

    root = make_gateway(input_cost_per_token=1e-3, output_cost_per_token=1e-3)

    def one_call(budget: Budget, words: str):
        with within(RunContext(budget=budget)):
            return asyncio.run(_ask(root.fork(), words))

    tiny = _in_thread(lambda: one_call(Budget(1e-6), "too dear"), keep_context=True)
    ample = _in_thread(lambda: one_call(Budget(100.0), "affordable"), keep_context=True)
    assert isinstance(tiny.get("error"), BudgetReached)
    assert ample.get("value") is not None and ample["value"].ok
    assert [r["messages"][-1]["content"] for r in loopback.requests] == ["affordable"]


def test_a_gateway_made_where_the_runs_context_was_lost_is_refused_while_a_plan_counts(make_gateway, loopback):
    """A thread started by hand, without the context, would make real requests in the middle of a plan: its
    gateway is refused, with how to fix it. With the context copied, the same fork counts as the plan."""
    root = make_gateway()
    counted = CallPlan()
    with within(RunContext(plan=counted)):
        lost = _in_thread(root.fork, keep_context=False)
        kept = _in_thread(root.fork, keep_context=True)
    assert isinstance(lost.get("error"), OutsideTheRun) and "copy_context" in str(lost["error"])
    assert kept["value"].context.plan is counted
    # No plan counted any more: a gateway outside any run is made as usual.
    assert _in_thread(root.fork, keep_context=False)["value"].context == RunContext()
    assert loopback.requests == []


def test_the_outermost_flow_starts_the_run_and_its_subflows_share_it():
    """A flow starts the run's context (its budget and --batch, keeping a plan being counted); a subflow runs in
    the same one, spending from the same budget; after the flow, the thread is outside any run again."""
    from rpbench.flows.kit.running.run import flow_body

    seen: list[RunContext] = []

    @flow_body
    def inner(settings: RunSettings) -> None:
        seen.append(current_run())

    @flow_body
    def outer(settings: RunSettings) -> None:
        seen.append(current_run())
        inner(RunSettings(max_cost=99.0))  # a subflow's own settings do not start another budget

    counted = CallPlan()
    with within(RunContext(plan=counted)):
        outer(RunSettings(max_cost=2.5, batch=True))
    assert seen[0] is seen[1] and seen[0].plan is counted and seen[0].batch_every_role
    assert seen[0].budget is not None and seen[0].budget.state() == {"budget": 2.5, "spent": 0.0, "reserved": 0.0}
    assert current_run() == RunContext() and not current_run().started


@pytest.mark.parametrize("where", ["budget", "plan", "batch"])
def test_no_module_holds_a_runs_mode(where):
    """The modules that once held the run's modes as globals hold none now (a new one would be read by every
    thread of the process)."""
    import rpbench.tasks.llm.batches as batches
    import rpbench.tasks.llm.budget as budget
    import rpbench.tasks.llm.planning as planning

    module = {"budget": budget, "plan": planning, "batch": batches}[where]
    held = {name for name, value in vars(module).items() if isinstance(value, Budget | CallPlan | bool)
            and not name.startswith("__")}
    assert held == set()


def _count_readings(monkeypatch) -> list[str | None]:
    """Every reading of a models file from now on (the one function that reads and checks one), by name."""
    import rpbench.tasks.llm.config as config

    read, readings = config.load_models_config, []

    def counted(path=None, *args, **kwargs):
        readings.append(None if path is None else str(path))
        return read(path, *args, **kwargs)

    monkeypatch.setattr(config, "load_models_config", counted)
    return readings


def test_a_run_reads_its_models_file_once_and_carries_it_to_every_stage(harness, loopback, tmp_path, monkeypatch):
    """The command reads and checks the models file; its plan, checks, flow, stages (their cache keys and
    gateways) and manifest take the run's copy. It was read again at each of about 20 places, and a file edited
    during a run reached some of its stages and not others."""
    from rpbench.samples import sample_path
    from tests.helpers import TEST_KEY_ENV, loopback_models_file, rpbench

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = lambda body: "A"
    models = loopback_models_file(tmp_path / "models.toml", loopback,
                                  default="input_cost_per_token = 1e-7\noutput_cost_per_token = 1e-6\n")
    args = ["quiz", "run", "--questions", str(sample_path("quiz", "questions.jsonl")), "--model", "examinee",
            "--out", str(tmp_path / "out"), "--models-file", str(models), "--cache", str(tmp_path / "c.sqlite")]
    readings = _count_readings(monkeypatch)
    ran = rpbench(*args)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert readings == [str(models)] and loopback.requests
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["role_settings"]["examinee"]["model"]["value"] == "openai/loopback"  # the run's copy

    # A budget is checked against a plan first (the command runs the flow on stand-ins): one reading still.
    readings.clear()
    again = rpbench(*args, "--max-cost", "5")
    assert again.returncode == 0, again.stderr[-2000:]
    assert readings == [str(models)]

    # A run no command started (a deployment's, a trigger's) reads it once, as its flow starts.
    from rpbench.flows.modes.quiz.flows import quiz
    from rpbench.flows.modes.quiz.mode import CharacterQuizSettings

    readings.clear()
    quiz(CharacterQuizSettings(questions=str(sample_path("quiz", "questions.jsonl")), models=["examinee"],
                           out=str(tmp_path / "out2"), models_file=str(models), cache=str(tmp_path / "c.sqlite")))
    assert readings == [str(models)]


def test_a_stage_cache_key_is_the_same_from_the_runs_copy_as_from_the_file(tmp_path):
    """What a stage's cache key holds of its roles (model, endpoint, sampling, retry) is the same whether taken
    from the run's carried configuration or read from the file, so runs cached before the run carried it are
    found cached after."""
    from rpbench.flows.kit.front.registry import models_config
    from rpbench.flows.kit.running.stage import role_identities

    models = tmp_path / "models.toml"
    models.write_text('[default]\nmodel = "openai/x"\napi_base = "http://127.0.0.1:9/v1"\ntemperature = 0.3\n'
                      '[roles.judge]\nmodel = "openai/y"\nmax_tokens = 77\n', encoding="utf-8")
    params = {"models_file": str(models)}
    read = role_identities(params, ["judge", "player"])
    carried = RunContext(budget=Budget(), models=models_config(str(models)), models_file=str(models))
    models.write_text('[default]\nmodel = "openai/other"\n', encoding="utf-8")  # edited while the run works
    with within(carried):
        assert role_identities(params, ["judge", "player"]) == read  # the run's copy, not the edit
    assert role_identities(params, ["judge", "player"]) != read  # outside the run, the edit
    assert read["judge"]["model"] == "openai/y" and read["player"]["model"] == "openai/x"
