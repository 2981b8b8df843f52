"""What every rpbench flow is wrapped in (``flow_body``: its Stages handed over, its budget, workers and signal
handling, a model it cannot use ending it in one line), and running a flow (``run_flow``).

The parts a flow calls live beside it: ``stages`` (Stages), ``finish`` (finish_run), ``notes`` (judge_notes)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import inspect
import logging
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from rpbench.flows.kit.front.registry import run_models
from rpbench.flows.kit.front.settings import ModelsFileSettings, RunSettings
from rpbench.flows.kit.running import interrupts
from rpbench.flows.kit.running.environment import heartbeats_where_watched, start_temporary_server
from rpbench.flows.kit.running.finish import failed_state, stopped_by_budget, stopped_run
from rpbench.flows.kit.running.notes import run_notes
from rpbench.flows.kit.running.report_imports import load_report_libraries_soon
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.scale.run_workers import workers_for_run
from rpbench.flows.kit.scale.runners import with_chosen_runner
from rpbench.prompts.releases import use_releases
from rpbench.tasks.core.errors import InputError, ModelUnusable
from rpbench.tasks.llm.budget import Budget, BudgetReached
from rpbench.tasks.llm.event_loop import run_coroutine
from rpbench.tasks.llm.run_context import RunContext, current_run, within

F = TypeVar("F", bound=Callable[..., Any])


def _freeze_imports_once() -> None:
    """Put what the process has loaded by its first flow (Prefect, litellm, pydantic's schemas: hundreds of
    thousands of objects) out of the garbage collector's sight, once. Every full collection walked them all
    again, with every thread stopped, a few times in each stage of a large run (benchmarks/scale.py).
    Freed objects still go by their reference counts. Cycles that are garbage already stay: a collection of
    the young generations sends the recent ones away first, and a full one, walking all of it, would hold up
    the run's first request for the few objects it finds (benchmarks/startup.py)."""
    if gc.get_freeze_count() == 0:
        gc.collect(1)
        gc.freeze()


R = TypeVar("R")


def _given_stages(fn: Callable[[Any, Stages], Any]) -> Callable[[Any], Any]:
    """``fn(s, stages)`` as the one-parameter flow Prefect serves, ``f(settings)``: the run's ``Stages`` made
    from the settings and handed over, so no flow builds it by hand."""
    first = next(iter(inspect.signature(fn, eval_str=True).parameters.values()))
    hints = inspect.get_annotations(fn, eval_str=True)

    def given(settings: Any) -> Any:
        stages = Stages(settings)
        try:
            return fn(settings, stages)
        except (ModelUnusable, InputError, KeyboardInterrupt) as exc:
            exc.rpbench_stages = stages  # type: ignore[union-attr]  # what a stopped run's manifest counts
            raise

    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(given, attr, getattr(fn, attr))
    given.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [first.replace(name="settings")], return_annotation=hints.get("return", inspect.Signature.empty))
    given.__annotations__ = {"settings": hints.get(first.name, Any), "return": hints.get("return", Any)}
    return given


def flow_body(fn: Callable[..., R]) -> Callable[..., R]:
    """What every rpbench flow function is wrapped in (inside Prefect's ``@flow``):

    - a flow declared ``def f(s: Settings, stages: Stages)`` is served and called as ``f(settings)``, its run's
      ``Stages`` made and handed to it;

    - a model the run cannot use (a refused or missing key, a model the provider does not know), or bad input
      found only once the run reads it, ends it Failed with one line, instead of a traceback in the log and
      the UI (the caller still gets the error raised);
    - the gateway's worker processes start with the run, and its first stage to use them takes them over
      (``run_workers.workers_for_run``);
    - the first flow of the process puts what it has loaded out of the garbage collector's sight;
    - a command's signal handling is kept over Prefect's (``interrupts.reclaim``);
    - the outermost flow starts the run's budget (``--max-cost``), and each flow says which of its judges is
      the same model as a model under test (``self_judging``).
    """
    if list(inspect.signature(fn).parameters)[1:2] == ["stages"]:
        fn = _given_stages(fn)  # (the signature Prefect sees is the returned wrapper's: settings only)

    def models_file(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        settings = kwargs.get("settings", args[0] if args else None)
        return getattr(settings, "models_file", None)

    @contextlib.contextmanager
    def outermost(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[None]:
        """The run starts with its outermost flow: its context (``run_context``) takes the budget and ``--batch``,
        keeping a plan the command is counting. Subflows (a demo's, a suite's) run inside it and spend from the
        same budget; a later run in the process, outside it, starts its own."""
        settings = kwargs.get("settings", args[0] if args else None)
        context = current_run()
        if not context.started:
            use_releases(getattr(settings, "releases", None))  # a deployment's or a trigger's runs name it here
            models_file = getattr(settings, "models_file", None)
            # The models file as the command read it; a run no command started (a deployment's, a trigger's)
            # reads it here, once. Only a settings without a models file (none of a run's) goes without.
            models = run_models(models_file) if isinstance(settings, ModelsFileSettings) else None
            context = RunContext(plan=context.plan, budget=Budget(getattr(settings, "max_cost", None)),
                                 batch_every_role=bool(getattr(settings, "batch", False)),
                                 models=models, models_file=models_file)
        with within(context):
            # Said as the run starts: on the command line and in the UI's log (a plan carries them itself, once).
            if isinstance(settings, RunSettings) and context.plan is None:
                for line in run_notes(settings, run_models(settings.models_file)):
                    logging.getLogger("rpbench").warning("warning: %s", line)
            yield

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            _freeze_imports_once()
            load_report_libraries_soon()
            interrupts.reclaim()
            try:
                with outermost(args, kwargs), workers_for_run(models_file(args, kwargs)):
                    return await fn(*args, **kwargs)
            except (ModelUnusable, InputError) as exc:
                return stopped(exc, args, kwargs)

        return _typed_like(run_async, fn)

    def stopped(exc: ModelUnusable | InputError, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        settings, stages = kwargs.get("settings", args[0] if args else None), getattr(exc, "rpbench_stages", None)
        if isinstance(exc, BudgetReached):
            stopped_by_budget(settings, fn.__name__, exc, stages)
        elif isinstance(exc, ModelUnusable):  # a model it cannot use: the manifest says what was done before
            stopped_run(settings, fn.__name__, stages, exc)
        return failed_state(exc)

    def interrupted(exc: KeyboardInterrupt, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Ctrl-C (or SIGTERM): the manifest says what the run did before it (``finish.stopped_run``); whatever
        goes wrong writing it, the interrupt goes on."""
        try:
            with outermost(args, kwargs):
                stopped_run(kwargs.get("settings", args[0] if args else None), fn.__name__,
                            getattr(exc, "rpbench_stages", None), exc)
        except Exception as failed:  # the stop is what matters here
            logging.getLogger("rpbench").warning("warning: the stopped run's manifest was not written (%s)", failed)

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        _freeze_imports_once()
        load_report_libraries_soon()
        interrupts.reclaim()
        try:
            with outermost(args, kwargs), workers_for_run(models_file(args, kwargs)):
                return fn(*args, **kwargs)
        except (ModelUnusable, InputError) as exc:
            return stopped(exc, args, kwargs)
        except KeyboardInterrupt as exc:
            interrupted(exc, args, kwargs)
            raise

    return _typed_like(run, fn)


def _typed_like(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """The wrapper with ``fn``'s signature, its annotations evaluated: Prefect validates a flow's parameters
    against its signature, resolving names in the module of the function it was given (this one)."""
    wrapper.__signature__ = inspect.signature(fn, eval_str=True)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {k: v for k, v in inspect.get_annotations(fn, eval_str=True).items()}
    return wrapper


def run_flow(flow_fn: Any, **params: Any) -> Any:
    """Run a flow (sync or async) on the runner the environment chooses. The command line's entry point shuts
    Prefect down once the command is done (``environment.shutdown_prefect``)."""
    start_temporary_server()
    with heartbeats_where_watched():
        result = with_chosen_runner(flow_fn)(**params)
        if asyncio.iscoroutine(result):
            result = run_coroutine(result)
    return result
