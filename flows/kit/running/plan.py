"""``--plan``: what a command would send and spend, found by running it with nothing sent.

The command runs as usual, on the threads runner, with its output folders and files swapped for a scratch copy
(hard links: the user's folder is read, never written), while the gateway answers every request the call cache
cannot with a stand-in reply and counts it (``tasks.llm.planning``). The command's own output is set aside; the
plan is printed, as a table or (``--json``) as one JSON object, and kept as ``plan.json`` in the command's output
folder, where the run that follows shows it beside what it spent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import typer
from rich.console import Console

from rpbench.flows.kit.front.settings import RunSettings, output_fields
from rpbench.storage.tables import atomic_write_bytes
from rpbench.tasks.core.errors import RunFailed
from rpbench.tasks.llm.keys import keys_checked_elsewhere
from rpbench.tasks.llm.planning import CallPlan, PlanPassedBudget
from rpbench.tasks.llm.run_context import current_run, within
from rpbench.tasks.reports.summary import span_text

PLAN_FILE = "plan.json"


def _link_or_copy(src: str, dst: str) -> None:
    # A journal is appended to in place: a copy. Every other file is replaced whole when written: a link.
    if src.endswith(".jsonl"):
        shutil.copy2(src, dst)
        return
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _scratch(settings: RunSettings, scratch: Path) -> RunSettings:
    """``settings`` with every output moved into ``scratch``, holding a copy of what is there already."""
    values = settings.model_dump()
    for k, name in enumerate(output_fields(type(settings))):
        value = values.get(name)
        if not value:
            continue
        source, target = Path(value), scratch / f"{k}-{Path(value).name or 'out'}"
        if source.is_dir():
            shutil.copytree(source, target, copy_function=_link_or_copy, symlinks=True,
                            ignore=shutil.ignore_patterns("*.lock", ".rpbench-lock*"))
        elif source.is_file():
            shutil.copy2(source, target)
        values[name] = str(target)
    return type(settings).model_validate(values)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The command's own output set aside: what it prints, rpbench's log lines below warnings, and Prefect's of
    the runs on stand-ins (a stage a plan stops, checked against a budget, is no error of the user's)."""
    names = ["rpbench", *(n for n in logging.root.manager.loggerDict if n == "prefect" or n.startswith("prefect."))]
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING if lg.name == "rpbench" else logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def settings_digest(settings: RunSettings) -> str:
    """What a plan is a plan of: the settings and the models file's content (a later run compares it)."""
    from rpbench.flows.kit.front.registry import run_models

    config = run_models(settings.models_file).redacted()
    blob = orjson.dumps({"settings": settings.model_dump(mode="json", exclude={"cache"}), "models": config},
                        option=orjson.OPT_SORT_KEYS, default=str)
    return hashlib.sha256(blob).hexdigest()


def make_plan(run: Callable[[Any], None], settings: RunSettings, shortest_only: bool = False,
              calls: CallPlan | None = None) -> dict[str, Any]:
    """Run the command ``run`` on ``settings`` sending nothing; the plan of what it would send. With
    ``shortest_only``, only the pass whose dialogues end at the first chance (all a budget's floor needs).
    ``calls`` is where the requests are counted (a fresh ``CallPlan`` unless given: one checked against a
    budget as it is made is read afterwards for ``passed``)."""
    counted = calls if calls is not None else CallPlan()
    runner = os.environ.get("RPBENCH_RUNNER")
    os.environ["RPBENCH_RUNNER"] = "threads"  # the gateway that counts is this process's
    try:
        with _progress(counted) as say, within(dataclasses.replace(current_run(), plan=counted)):
            say("planning (stand-in replies, nothing sent)")
            _run_on_stand_ins(run, settings, counted, shortest_only=shortest_only)
            if counted.endings_offered and counted.passed is None and not shortest_only:
                # a dialogue may end early: count it ended at the first chance too (low)
                say("planning, second pass (dialogues ended early)")
                _run_on_stand_ins(run, settings, counted, ending=True)
    finally:
        if runner is None:
            os.environ.pop("RPBENCH_RUNNER", None)
        else:
            os.environ["RPBENCH_RUNNER"] = runner
    from rpbench.flows.kit.front.registry import run_models
    from rpbench.flows.kit.running.notes import role_settings, run_notes

    planned = counted.result()
    config = run_models(settings.models_file)
    # What the run would say as it starts (a judge scoring its own model, roles left on the embedded model).
    planned["notes"] = [*run_notes(settings, config), *planned["notes"]]
    # What each role would be sent, and where each value comes from.
    sends = role_settings(config, {r["role"] for r in planned["roles"]})
    for r in planned["roles"]:
        r["settings"] = sends[r["role"]]
    return {**planned, "settings_digest": settings_digest(settings)}


@contextlib.contextmanager
def _progress(counted: CallPlan, console: Console | None = None) -> Iterator[Callable[[str], None]]:
    """A status line on a terminal while a plan is made (a large run's plan goes through all its data): what it is
    doing and how many requests it has counted, refreshed twice a second; gone when the plan is printed.
    Nothing is written where stderr is not a terminal (logs, scripts reading --json)."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield lambda _doing: None
        return
    doing = ["planning"]
    stop = threading.Event()
    with console.status("planning") as status:  # a spinner, and the text tick() gives it
        def tick() -> None:
            while True:
                n = counted.counted()
                status.update(f"{doing[0]}: {n:,} requests counted" if n else doing[0])
                if stop.wait(0.5):
                    return

        def say(text: str) -> None:
            doing[0] = text

        ticker = threading.Thread(target=tick, name="rpbench-plan-progress", daemon=True)
        ticker.start()
        try:
            yield say
        finally:
            stop.set()
            ticker.join()


def _run_on_stand_ins(run: Callable[[Any], None], settings: RunSettings, counted: CallPlan, ending: bool = False,
                      shortest_only: bool = False) -> None:
    from prefect import tags

    scratch = Path(tempfile.mkdtemp(prefix="rpbench-plan-"))
    counted.start(ending=ending)
    counted.ending = counted.ending or shortest_only  # one pass, its stand-ins taking every offer to end
    try:
        planned = _scratch(settings, scratch)
        # Nothing is sent, so no key is needed yet (the run itself checks them).
        with _quiet(), tags("rpbench-plan"), keys_checked_elsewhere():
            try:
                run(planned)
            except RunFailed:
                pass  # stand-in replies may fail a run's rule on failures; the calls are counted all the same
            except PlanPassedBudget as passed:  # checked against a budget: the rest need not be counted
                counted.passed = passed.floor
            except typer.Exit as exc:
                if exc.exit_code not in (0, 3):
                    raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def keep_plan(plan: dict[str, Any], settings: RunSettings) -> list[Path]:
    """``plan.json`` in each output folder of the command (the run that follows shows it beside its spend)."""
    kept = []
    for name in output_fields(type(settings), folders_only=True):
        folder = getattr(settings, name)
        if folder:
            path = Path(folder) / PLAN_FILE
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, json.dumps(plan, indent=1, ensure_ascii=False).encode("utf-8"))
            kept.append(path)
    return kept


def planned_for(settings: RunSettings, out: str | Path) -> dict[str, Any] | None:
    """The plan kept in ``out`` if it was made for these settings and this models file, else None."""
    path = Path(out) / PLAN_FILE
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return plan if isinstance(plan, dict) and plan.get("settings_digest") == settings_digest(settings) else None


def budget_verdict(plan: dict[str, Any], budget: float) -> dict[str, Any]:
    """What the plan says of a budget: ``unpriced`` (a model's price is unknown: it cannot run under one),
    ``below_floor`` (the prompts alone, with one token of reply a call, cost more: the run could not finish
    whatever the replies), ``may_stop`` (its plan may cost more), or ``fits``."""
    unpriced = sorted({r["model"] for r in plan["stages"] if r["cost_usd"] is None})
    cost = plan["total"]["cost_usd"]
    low, high = (cost if isinstance(cost, list) else [cost, cost])
    floor = plan["total"].get("cost_floor_usd") or 0.0
    if unpriced:
        status, text = "unpriced", (f"no known price for {', '.join(unpriced)}, so the run cannot be held to a "
                                    "budget (give input_cost_per_token and output_cost_per_token for it in the "
                                    "models file)")
    elif floor > budget:
        status, text = "below_floor", (f"the budget ${budget:.4f} is below the least this run could cost (its "
                                       f"prompts, with one token of reply a call: ${floor:.4f}; calls in the call "
                                       "cache are free): it would stop before finishing; give a larger one")
    elif high > budget:
        status, text = "may_stop", (f"the budget ${budget:.4f} may stop the run before it finishes: it costs "
                                    f"${low:.4f}-{high:.4f} by its plan (at least ${floor:.4f}); a stopped run "
                                    "continues with the same command and a larger budget")
    else:
        status, text = "fits", f"the budget ${budget:.4f} holds the whole plan (at most ${high:.4f})"
    return {"max_cost": budget, "status": status, "text": text}


def fmt_range(value: Any, digits: int = 0) -> str:
    return span_text(value, digits, "-")


def plan_text(plan: dict[str, Any]) -> str:
    """The plan as a table for the terminal."""
    head = ("stage", "role", "model", "calls", "cached", "prompt tokens", "reply tokens", "USD")
    rows = [(r["stage"] or "-", r["role"] + (f" ({r['sent_as']})" if r.get("sent_as") else ""), r["model"],
             fmt_range(r["calls"]), str(r["cached_calls"]),
             fmt_range(r["prompt_tokens"]), fmt_range(r["reply_tokens"]), fmt_range(r["cost_usd"], 4))
            for r in plan["stages"]]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    line = "  ".join
    out = ["plan: nothing was sent; requests not in the call cache were answered by stand-ins and counted",
           line(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    out += [line(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    out.append("by role:")
    for r in plan["roles"]:
        out.append(f"  {r['role']} ({', '.join(r['models'])}): calls {fmt_range(r['calls'])}, "
                   f"USD {fmt_range(r['cost_usd'], 4)}")
        if r.get("settings"):
            sent = r["settings"]
            out.append("    sends " + ", ".join(f"{k} {sent[k]['value']!r} ({sent[k]['from']})"
                                                for k in ("temperature", "top_p", "max_tokens")
                                                if k in sent and sent[k]["value"] is not None))
    t = plan["total"]
    unpriced = [r["role"] for r in plan["roles"] if r["cost_usd"] is None]  # left out of the total, not free
    out.append(f"total: calls {fmt_range(t['calls'])} ({t['cached_calls']} more from the cache, free); prompt tokens "
               f"{fmt_range(t['prompt_tokens'])}; reply tokens {fmt_range(t['reply_tokens'])}; "
               f"USD {fmt_range(t['cost_usd'], 4)}" + (f" (and {', '.join(unpriced)} at no known price)"
                                                      if unpriced else ""))
    out.append(f"prompt tokens in a prefix of 1,024 tokens or more sent earlier in the run (billed at the cached "
               f"price where the provider caches prompts): {t['cacheable_prompt_tokens']:,} "
               f"({100 * t['cacheable_share']:.0f}% of the low count)")
    out.append("ranges: low if every reply is read at its first attempt, high if every reply takes every attempt "
               "and max_tokens; a dialogue that may end early: low ended at its first chance, high run to its longest")
    out += [f"note: {n}" for n in plan["notes"]]
    if plan.get("budget"):
        out.append(f"budget: {plan['budget']['text']}")
    return "\n".join(out)
