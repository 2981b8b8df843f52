"""A run held to a budget (--max-cost, or a role's max_cost): it stops before the spend could pass it, exits 3
naming the spend and the budget, and the same command with a larger budget continues, sending no completed call
again."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers import TEST_KEY_ENV, rpbench

EXAMPLE = Path(__file__).resolve().parent.parent / "samples" / "roleinteract" / "example.json"
ITEMS = 21
PRICE = 0.001  # per reply token; prompts are free here, so a request's most is max_tokens * PRICE exactly


def _models(tmp_path: Path, base: str, role_budget: float | None) -> Path:
    path = tmp_path / "models.toml"
    # One request at a time: where the run stops does not depend on how replies interleave.
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{base}"\napi_key_env = "{TEST_KEY_ENV}"\n'
                    "max_concurrency = 1\nmax_tokens = 8\ninput_cost_per_token = 0.0\n"
                    f"output_cost_per_token = {PRICE}\n"
                    + (f"max_cost = {role_budget}\n" if role_budget is not None else "")
                    # The role under test (`--model test`) declares its own cap, which [default] leaves alone.
                    + "[roles.test]\nmax_tokens = 8\n")
    return path


@pytest.mark.parametrize("where", ["--max-cost", "models file"])
def test_a_run_stops_at_its_budget_and_a_larger_one_continues(harness, loopback, tmp_path, where):
    loopback.responder = lambda body: "I choose B."  # 2 reply tokens: each answer costs 2 * PRICE
    budget = 31 * PRICE  # 12 answers (24) leave 7, less than the 8 a 13th could cost
    models = _models(tmp_path, loopback.base_url, budget if where == "models file" else None)
    args = ["roleinteract", "run", "--data", str(EXAMPLE), "--model", "test", "--out", str(tmp_path / "run"),
            "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite")]
    env = {TEST_KEY_ENV: "k"}
    stopped = rpbench(*args, *(["--max-cost", str(budget)] if where == "--max-cost" else []), env=env)
    assert stopped.returncode == 3, stopped.stderr[-2000:]
    line = stopped.stderr.strip().splitlines()[-1]
    assert "budget reached" in line and f"${budget:.4f}" in line, line
    answered = {e["digest"] for e in loopback.log if e.get("ok")}
    # Spent 2 * PRICE a call; the next call could cost 8 * PRICE: it stops once spent + 8 * PRICE passes 30 * PRICE.
    assert len(answered) == 12 and len(loopback.log) == 12
    journals = list((tmp_path / "run").rglob("*.journal.jsonl"))
    assert journals  # the calls of the stopped stage are accounted for
    # The stopped run's manifest has every section a finished run's has, its totals counting what was answered.
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["outcome"]["status"] == "stopped" and manifest["budget"]["budget_usd"] == budget
    for key in ("totals", "this_run", "release_files", "role_settings", "prompt_templates"):
        assert key in manifest, key
    assert manifest["totals"]["calls"] == 12 and manifest["this_run"]["calls_sent"] == 12
    assert manifest["totals"]["cost_usd"] == pytest.approx(12 * 2 * PRICE)
    assert any("dataset.py" in k for k in manifest["release_files"]) and "test" in manifest["role_settings"]
    spent = 12 * 2 * PRICE
    assert spent <= budget
    first = len(loopback.log)
    if where == "models file":
        models.write_text(models.read_text().replace(f"max_cost = {budget}", "max_cost = 1.0"))
    more = rpbench(*args, *(["--max-cost", "1"] if where == "--max-cost" else []), env=env)
    assert more.returncode == 0, more.stderr[-2000:]
    again = [e["digest"] for e in loopback.log[first:]]
    assert not answered & set(again) and len(again) == ITEMS - 12
    calls = pq.read_table(tmp_path / "run" / "calls.parquet").to_pylist()
    # Every call paid once: the stopped run's 12 (journaled) and the 9 the rerun sent; its 12 cached ones are free.
    assert sum(c["cost_usd"] or 0 for c in calls if not c["cached"]) == pytest.approx(ITEMS * 2 * PRICE)
    # What this run did itself leaves the stopped run's calls out (they are in the totals above, not sent again).
    this_run = json.loads((tmp_path / "run" / "manifest.json").read_text())["this_run"]
    assert this_run["calls_sent"] == ITEMS - 12 and this_run["cost_usd"] == pytest.approx((ITEMS - 12) * 2 * PRICE)
    assert f"calls sent by this run: {ITEMS - 12}," in more.stdout


def test_a_model_with_no_known_price_cannot_run_under_a_budget(harness, loopback, tmp_path):
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/no-such-priced-model"\napi_base = "{loopback.base_url}"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\n')
    ran = rpbench("roleinteract", "run", "--data", str(EXAMPLE), "--model", "test", "--out", str(tmp_path / "run"),
                  "--models-file", str(models), "--max-cost", "1", env={TEST_KEY_ENV: "k"})
    # Refused at the command line, before any flow starts (nothing sent, no run folder made).
    assert ran.returncode == 2 and not loopback.log and not (tmp_path / "run" / "calls").exists()
    assert ran.stderr.strip() == ("error: --max-cost: no known price for openai/no-such-priced-model, so the run "
                                  "cannot be held to a budget (give input_cost_per_token and output_cost_per_token "
                                  "for it in the models file)")


def test_a_budget_below_the_plans_least_cost_is_refused_and_the_plan_says_so(harness, loopback, tmp_path):
    models = _models(tmp_path, loopback.base_url, None)
    args = ["roleinteract", "run", "--data", str(EXAMPLE), "--model", "test", "--out", str(tmp_path / "run"),
            "--models-file", str(models), "--max-cost", "0.00001"]
    ran = rpbench(*args, env={TEST_KEY_ENV: "k"})
    assert ran.returncode == 2 and not loopback.log and "is below the least this run could cost" in ran.stderr
    planned = rpbench(*args, "--plan", env={TEST_KEY_ENV: "k"})
    assert planned.returncode == 0 and "budget: the budget $0.0000 is below the least this run could cost" in \
        planned.stdout
    fits = rpbench(*args[:-1], "1", "--plan", env={TEST_KEY_ENV: "k"})
    assert "budget: the budget $1.0000 holds the whole plan" in fits.stdout


def test_a_budget_holds_with_sixteen_requests_in_flight(harness, loopback, tmp_path):
    """SocialBench's released emotional_perception.json, 16 requests in flight, prompts priced: at twice the full
    cost the run completes; at half it stops after spending 80-100% of its budget (a request waits for those in
    flight to settle rather than count their reservations as spent), its manifest says so, and a larger budget
    finishes it without sending an answered request again."""
    import json

    from tests.helpers import released

    data = released("socialbench/emotional_perception.json")
    # Long replies (about 150 tokens each, at the reply price): the run costs far more than its prompts.
    loopback.responder = lambda body: "B. " + "I weigh every option with care before I choose. " * 12
    loopback.latency = 0.2  # replies take a while: many requests are in flight at once
    loopback.prompt_tokens = lambda body: len(json.dumps(body["messages"])) // 4
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\nmax_concurrency = 16\nmax_tokens = 256\n'
                      "input_cost_per_token = 0.0001\noutput_cost_per_token = 0.001\n")
    env = {TEST_KEY_ENV: "k"}

    def run(name: str, *more: str):
        return rpbench("roleinteract", "run", "--data", str(data), "--limit", "10", "--drop-unanswerable",
                       "--model", "test", "--out",
                       str(tmp_path / name), "--models-file", str(models), "--cache", str(tmp_path / f"{name}.sqlite"),
                       "--resamples", "40", *more, env=env)

    full = run("full")
    assert full.returncode == 0, full.stderr[-2000:]
    cost = json.loads((tmp_path / "full" / "manifest.json").read_text())["totals"]["cost_usd"]
    items = len(loopback.log)
    assert items == 40 and cost > 0
    twice = run("twice", "--max-cost", str(2 * cost))
    assert twice.returncode == 0, twice.stderr[-2000:]
    loopback.log.clear()
    half = run("half", "--max-cost", str(cost / 2))
    assert half.returncode == 3 and "budget reached" in half.stderr
    manifest = json.loads((tmp_path / "half" / "manifest.json").read_text())
    assert manifest["outcome"]["status"] == "stopped"
    spent = manifest["budget"]["spent_usd"]
    assert 0.8 * cost / 2 <= spent <= cost / 2, (spent, cost)
    assert manifest["budget"]["left_usd"] == pytest.approx(cost / 2 - spent, abs=1e-6)
    answered = {e["digest"] for e in loopback.log if e.get("ok")}
    first = len(loopback.log)
    more = run("half", "--max-cost", str(2 * cost))
    assert more.returncode == 0, more.stderr[-2000:]
    again = {e["digest"] for e in loopback.log[first:]}
    assert not answered & again and len(answered) + len(again) == items


def test_once_the_budget_is_reached_no_request_starts_even_one_that_would_fit():
    """The run stops when a request does not fit with nothing in flight; a smaller request asking just after
    must not start (it could be answered after the run ends, never stored, and paid for again by the rerun:
    on the sixteen-in-flight run above, one request a rerun sent again)."""
    from rpbench.tasks.llm.budget import Budget, BudgetReached

    budget = Budget(1.0)
    first = budget.try_reserve("r", "m", None, 0.6)
    assert first == 0.6
    assert budget.try_reserve("r", "m", None, 0.5) is None  # waits: the first may settle below its reservation
    budget.settle("r", first, 0.6)
    with pytest.raises(BudgetReached):
        budget.try_reserve("r", "m", None, 0.5)  # 0.6 + 0.5 > 1 with nothing in flight: the run stops
    with pytest.raises(BudgetReached):
        budget.try_reserve("r", "m", None, 0.1)  # would fit, but the run is stopping
    budget = Budget(2.0)  # the same command with a larger budget: a new run, free to start requests
    assert budget.try_reserve("r", "m", None, 0.1) == 0.1


async def test_a_request_waiting_for_the_budget_is_never_left_waiting_on_rounding():
    """Reservations of 0.1, 0.2 and 0.3 settled in another order leave their float sum at 1.1e-16, not 0: a request
    that does not fit waited for that "money in flight" for ever (a run under --max-cost hung with nothing in
    flight). With every reservation settled, it stops the run at once."""
    import asyncio

    from rpbench.tasks.llm.budget import Budget, BudgetReached

    budget = Budget(1.0)
    held = [budget.try_reserve("r", "m", None, x) for x in (0.1, 0.2, 0.3)]
    assert held == [0.1, 0.2, 0.3]
    for x in (0.1, 0.3, 0.2):  # each reply cost what it reserved
        budget.settle("r", x, x)
    assert budget.state() == {"budget": 1.0, "spent": pytest.approx(0.6), "reserved": 0.0}
    with pytest.raises(BudgetReached):
        await asyncio.wait_for(budget.reserve("r", "m", None, (0.0, 0.001), [[]], 500), timeout=5)
    # A reservation of nothing (a free model) is still one in flight until it settles.
    budget = Budget(1.0)
    free = budget.try_reserve("r", "m", None, 0.0)
    assert budget.try_reserve("r", "m", None, 2.0) is None  # waits for the free one
    budget.settle("r", free, 0.0)
    with pytest.raises(BudgetReached):
        budget.try_reserve("r", "m", None, 2.0)


def test_characterbench_under_a_budget_with_sixteen_in_flight_stops_by_itself_and_resumes(loopback, tmp_path):
    """The issue's case: CharacterBench, its first 20 items of every stored dimension, 16 requests in flight,
    replies dearer than their prompts, --max-cost 0.1. It ends by itself (exit 3, in a process of its own given two
    minutes: it hung before), its manifest saying it stopped at its budget; a larger budget finishes it without
    sending an answered call again."""
    import json
    import os
    import subprocess
    import time

    from tests.helpers import CLI, released

    files = [a for d in ("engagement", "human_likeness", "memory_consistency")
             for a in ("--data", str(released(f"characterbench/{d}_test.json")))]
    reply = "（点头）" + "好的，我明白了。" * 40  # about 85 reply tokens, each dearer than 200 prompt tokens
    loopback.responder = lambda body: (json.dumps({"response": reply}, ensure_ascii=False)
                                       if len(body["messages"]) == 1 else "3")
    loopback.latency = 0.05
    loopback.prompt_tokens = lambda body: len(json.dumps(body["messages"], ensure_ascii=False)) // 4
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\nmax_concurrency = 16\ntimeout = 10\n'
                      "input_cost_per_token = 0.0000002\noutput_cost_per_token = 0.00004\n")
    env = {**os.environ, TEST_KEY_ENV: "k"}
    args = ["characterbench", "run", *files, "--limit", "20", "--model", "characterbench-player",
            "--judge-output", "number", "--out", str(tmp_path / "run"), "--models-file", str(models),
            "--cache", str(tmp_path / "calls.sqlite"), "--resamples", "40"]
    started = time.monotonic()
    stopped = subprocess.run([*CLI, *args, "--max-cost", "0.1"], capture_output=True, text=True, env=env,
                             timeout=120)
    assert stopped.returncode == 3, stopped.stderr[-2000:]
    assert "budget reached" in stopped.stderr and time.monotonic() - started < 120
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["outcome"]["status"] == "stopped" and 0 < manifest["budget"]["spent_usd"] <= 0.1
    answered = {e["digest"] for e in loopback.log if e.get("ok")}
    first = len(loopback.log)
    more = subprocess.run([*CLI, *args, "--max-cost", "5"], capture_output=True, text=True, env=env, timeout=300)
    assert more.returncode == 0, more.stderr[-2000:]
    again = {e["digest"] for e in loopback.log[first:]}
    assert answered and not answered & again


def _priced(tmp_path: Path, base: str) -> Path:
    """Prompts and replies priced, so the least a run can cost grows with every prompt counted."""
    path = tmp_path / "priced.toml"
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{base}"\napi_key_env = "{TEST_KEY_ENV}"\n'
                    "input_cost_per_token = 0.00001\noutput_cost_per_token = 0.00004\n", encoding="utf-8")
    return path


def test_a_suite_under_a_budget_it_cannot_keep_is_refused_in_one_line_before_anything_starts(harness, loopback,
                                                                                             tmp_path):
    """The plan behind the refusal stops once the least its calls can cost passes the budget (not after planning
    every mode), and says so once: no Prefect log lines of the runs on stand-ins, no run folder."""
    ran = rpbench("suite", "run", "--model", "test", "--limit", "1", "--max-cost", "0.001",
                  "--models-file", str(_priced(tmp_path, loopback.base_url)), "--out", str(tmp_path / "suite"),
                  "--cache", str(tmp_path / "calls.sqlite"), env={TEST_KEY_ENV: "k"})
    assert ran.returncode == 2 and not loopback.log
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --max-cost: the budget $0.0010 is below the least this "
                                                   "run could cost"), ran.stderr[-2000:]
    assert not (tmp_path / "suite").exists()


def test_a_budget_is_refused_against_the_shortest_dialogues_not_the_longest(harness, loopback, tmp_path):
    """CoSER's scenes end when the next-speaker predictor says so: the least a run can cost is that of the
    dialogues ending at the first chance. A budget just above it may stop the run but is not refused; one just
    below it is."""
    models = _priced(tmp_path, loopback.base_url)
    args = ["coser", "run", "--data", str(EXAMPLE.parent.parent / "coser" / "example.json"), "--model", "test",
            "--models-file", str(models), "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "calls.sqlite")]
    planned = rpbench(*args, "--plan", "--json", env={TEST_KEY_ENV: "k"})
    assert planned.returncode == 0, planned.stderr[-2000:]
    total = json.loads(planned.stdout)["total"]
    floor, longest_prompts = total["cost_floor_usd"], total["prompt_tokens"][1]
    assert longest_prompts * 0.00001 > 2 * floor  # the longest dialogues' prompts alone cost far more
    below = rpbench(*args, "--max-cost", f"{floor * 0.9:.6f}", env={TEST_KEY_ENV: "k"})
    assert below.returncode == 2 and "is below the least this run could cost" in below.stderr and not loopback.log
    loopback.inject("401", 50)  # the run that is let start ends at its first reply, in one line
    above = rpbench(*args, "--max-cost", f"{floor * 1.1:.6f}", env={TEST_KEY_ENV: "k"})
    assert "is below the least" not in above.stderr and loopback.log, above.stderr[-2000:]
    assert above.returncode == 3 and "cannot be used" in above.stderr, above.stderr[-2000:]


def test_a_budget_one_request_can_pass_is_refused_naming_the_role(harness, loopback, tmp_path):
    """PingPong at its release's settings (the judge's replies up to 4,096 tokens), reply tokens at $1e-4: one
    judge request may cost $0.41, more than a $0.12 budget, so the run could never finish. Refused before any call,
    in one line naming the role and by how much (it used to send one call and stop)."""
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\nmax_concurrency = 16\ninput_cost_per_token = 1e-7\n'
                      "output_cost_per_token = 1e-4\n", encoding="utf-8")
    settings = Path(__file__).resolve().parent.parent / "samples" / "pingpong" / "settings.yaml"
    args = ["pingpong", "run", "--model", "player", "--judge", "pingpong-judge", "--settings", str(settings),
            "--max-turns", "3", "--limit", "4", "--out", str(tmp_path / "run"), "--models-file", str(models),
            "--cache", str(tmp_path / "calls.sqlite")]
    ran = rpbench(*args, "--max-cost", "0.12", env={TEST_KEY_ENV: "k"})
    assert ran.returncode == 2 and not loopback.log, ran.stderr[-2000:]
    lines = ran.stderr.strip().splitlines()
    # The player's replies (1,536 tokens, $0.1536 at the most) are asked first; the judge's (4,096) cost more still.
    assert len(lines) == 1 and "one request of role 'player'" in lines[0], lines
    assert "up to 1536 tokens of reply" in lines[0] and "more than the whole budget $0.1200" in lines[0]
    judged = rpbench(*args, "--max-cost", "0.2", env={TEST_KEY_ENV: "k"})
    assert judged.returncode == 2 and not loopback.log
    assert "one request of role 'pingpong-judge'" in judged.stderr and "up to 4096 tokens" in judged.stderr
    # A budget a single request fits in is not refused for it.
    fits = rpbench(*args, "--max-cost", "100", "--plan", env={TEST_KEY_ENV: "k"})
    assert fits.returncode == 0 and "one request of role" not in fits.stdout + fits.stderr
