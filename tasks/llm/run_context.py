"""What kind of run a call belongs to: a plan or a real run, its budget, whether every role batches, and the
models configuration it read.

These used to be switches at module level, flipped by the command and read deep in the gateway, so any thread
in the process saw whatever the last command set. Now they are one immutable ``RunContext`` in a context
variable. The command sets it for a plan (``--plan``), and the run's outermost flow sets it for the run (its
budget and ``--batch``). Python copies it into asyncio tasks and Prefect copies it into its task threads. Each
stage's gateway fork takes it when the fork is made, so every call of that stage answers to the run that made the
stage, whatever thread or loop later carries the call.

A thread that misses the context (one started by hand, without ``contextvars.copy_context``) gets an empty
context: a fork made there while a plan is running in the process is refused (``OutsideTheRun``). Otherwise the
plan's stand-ins would silently become real, paid requests.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from rpbench.tasks.llm.budget import Budget
from rpbench.tasks.llm.config import ModelsConfig
from rpbench.tasks.llm.planning import CallPlan


@dataclass(frozen=True)
class RunContext:
    """How the calls of one run are made.

    ``plan``: the plan being counted (``--plan``, or the check ahead of ``--max-cost``): every request the call
    cache cannot answer gets a stand-in reply, and nothing is sent. None for a real run.
    ``budget``: what the run may spend (``--max-cost``) and what each role may (``max_cost`` in the models file).
    It is None until the run's outermost flow starts, so None also means "no run has started here".
    ``batch_every_role``: ``--batch``, every role's independent calls go in batches.
    ``models``: the models file as the run read and checked it, once, when it started (the command, or the
    outermost flow of a run no command started), with ``models_file`` naming it as the settings do (a path, a
    preset's name, or None for the built-in one). Every stage, check, plan and manifest of the run takes its
    roles' settings from here: the file is not read again, and an edit made while the run works reaches the
    next run, never half of this one."""

    plan: CallPlan | None = None
    budget: Budget | None = None
    batch_every_role: bool = False
    models: ModelsConfig | None = None
    models_file: str | None = None

    def models_for(self, models_file: str | None) -> ModelsConfig | None:
        """The run's models configuration, if it was read from ``models_file`` (None otherwise)."""
        return self.models if self.models is not None and self.models_file == models_file else None

    @property
    def started(self) -> bool:
        return self.budget is not None


class OutsideTheRun(RuntimeError):
    """A gateway was made with no run context while a plan is being counted in this process."""


_current: ContextVar[RunContext | None] = ContextVar("rpbench_run_context", default=None)
_NO_RUN = RunContext()  # (frozen: the one empty context every caller outside a run shares)
# How many plans are being counted in this process: only the guard against a context-less fork reads it.
_plans = 0
_plans_lock = threading.Lock()


def current_run() -> RunContext:
    """The context of the run this code is part of (an empty one outside any run)."""
    return _current.get() or _NO_RUN


@contextlib.contextmanager
def within(context: RunContext) -> Iterator[RunContext]:
    """Run the block, and everything it starts that copies the context, as part of ``context``'s run."""
    global _plans
    token = _current.set(context)
    if context.plan is not None:
        with _plans_lock:
            _plans += 1
    try:
        yield context
    finally:
        if context.plan is not None:
            with _plans_lock:
                _plans -= 1
        _current.reset(token)


def context_for_a_gateway() -> RunContext:
    """The context a new gateway (a stage's fork) takes: this one; refused when it is empty while a plan is
    counted in this process, because a fork made outside its run would send real requests."""
    context = current_run()
    if context.plan is None and not context.started and _plans:
        raise OutsideTheRun("a stage's gateway was made outside its run's context while a plan is counted in this "
                            "process: start its thread with contextvars.copy_context().run (as Prefect does), or "
                            "its requests would be sent instead of counted")
    return context
