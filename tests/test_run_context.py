"""A run's modes (a plan, a budget, --batch) travel with the run, not with the process: two runs in one process at
once each keep their own, and a gateway made where the run's context was lost is refused while a plan counts."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
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
