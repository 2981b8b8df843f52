"""``--plan`` against the run it plans: every registered mode's smoke scenario (FURINA's covers the demo's flows:
a pool, a build, an evaluation) is planned with ``--plan --json`` and then run on the loopback server, which
answers as the plan's stand-ins do. The plan's calls must be within 5% of the requests the server received, its
prompt tokens within 20% of theirs, and the plan must send nothing and write nothing but plan.json. The server
ends every dialogue at its first chance, so the run is the plan's low end (FURINA's director may end a scene)."""

from __future__ import annotations

import json
from pathlib import Path

import litellm
import pytest

from rpbench.flows.kit.front.registry import load_ref, modes
from tests.helpers import (
    TEST_KEY_ENV,
    ending_stand_in_responder,
    loopback_models_file,
    rpbench,
    stand_in_responder,
)

pytestmark = pytest.mark.usefixtures("harness")


def _models_file(work: Path, server) -> Path:
    return loopback_models_file(work / "models.toml", server,
                                "input_cost_per_token = 0.000001\noutput_cost_per_token = 0.000004\n")


def _low(value):
    return value[0] if isinstance(value, list) else value


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else set()


@pytest.mark.parametrize("mode", sorted(modes()))
def test_the_plan_matches_the_run_it_plans(mode, loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "sk-test-abcdef0123456789")
    loopback.responder = ending_stand_in_responder
    models, cache = _models_file(tmp_path, loopback), tmp_path / "calls.sqlite"
    steps = modes()[mode].smoke_steps(tmp_path / "work")
    planned_steps, judged_itself = 0, False
    for step in steps:
        extra = ["--models-file", str(models), "--cache", str(cache)] if step.uses_models else []
        if step.uses_models:
            before = _files(step.out)
            loopback.requests.clear()
            ran = rpbench(*step.args, *extra, "--plan", "--json")
            assert ran.returncode == 0, f"{step.name} --plan: {ran.stderr[-2000:]}"
            assert loopback.requests == [], f"{step.name} --plan sent {len(loopback.requests)} requests"
            assert _files(step.out) - before <= {"plan.json"}, f"{step.name} --plan wrote into {step.out}"
            plan = json.loads(ran.stdout.strip().splitlines()[-1])
            total = plan["total"]
            assert set(total) >= {"calls", "prompt_tokens", "reply_tokens", "cost_usd"}
        ran = rpbench(*step.args, *extra)
        assert ran.returncode == 0, f"{step.name}: {ran.stderr[-2000:]}"
        if not step.uses_models:
            continue
        sent = loopback.requests
        tokens = sum(litellm.token_counter(model="gpt-4o-mini", messages=b["messages"]) for b in sent)
        planned_calls, planned_tokens = _low(total["calls"]), _low(total["prompt_tokens"])
        print(f"{step.name}: planned {planned_calls} calls ({total['calls']}), {planned_tokens} prompt tokens; "
              f"sent {len(sent)}, {tokens}")
        assert not [n for n in plan["notes"] if "could not be read" in n], (step.name, plan["notes"])
        assert abs(planned_calls - len(sent)) <= 0.05 * len(sent), (step.name, planned_calls, len(sent))
        assert abs(planned_tokens - tokens) <= 0.2 * max(tokens, 1), (step.name, planned_tokens, tokens)
        if sent:
            assert _low(total["cost_usd"]) > 0
        manifest = json.loads((step.out / "manifest.json").read_text())
        assert manifest["plan"] == total, f"{step.name}: the run's manifest does not show its plan"
        assert manifest["this_run"]["calls_sent"] == len(sent)
        report = step.out / "report.html"
        for line in manifest.get("self_judging") or []:  # every role here is one model: judges judge themselves
            assert report.is_file() and line.split(":")[0] in report.read_text(), f"{step.name}: {line}"
        judged_itself = judged_itself or bool(manifest.get("self_judging"))
        planned_steps += 1
        last = step, extra
    # Planned again after the run: every call is in the cache now, so nothing is left to pay.
    step, extra = last
    again = json.loads(rpbench(*step.args, *extra, "--plan", "--json").stdout.strip().splitlines()[-1])["total"]
    assert again["calls"] == 0 and again["cost_usd"] == 0 and again["cached_calls"] > 0, again
    assert planned_steps, f"mode {mode}'s smoke scenario calls no model, so nothing was planned"
    # A mode with a judge (its settings name one) says, on one model, that the judge judged its own model.
    found = modes()[mode]
    judged = any(getattr(s, "judge_roles", ()) or getattr(s, "judge_fields", ())
                 for s in map(load_ref, found.settings.values()))
    assert judged_itself or not judged, f"{mode}: no run of it said its judge judged its own model"


def _commands():
    """Every command of the command line (each mode loaded), by its words."""
    from rpbench.flows.cli.main import make_cli
    from rpbench.flows.kit.front.registry import modes

    cli = make_cli()
    for mode in modes().values():
        cli._load(mode)
    out = {}

    def walk(cmd, words):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, (*words, name))
        else:
            out[" ".join(words)] = cmd

    walk(cli, ())
    return out


def test_every_command_that_calls_models_through_its_stages_plans_and_no_other_does():
    offered = {words for words, cmd in _commands().items() if any(p.name == "plan" for p in cmd.params)}
    must = {"demo", "build", "eval", "pool build", "characters synthesize", "suite run", "pingpong run",
            "pingpong rejudge", "dmt run", "roleinteract run", "rolellm eval", "rolellm context-instruct",
            "rolellm general", "rolellm profile", "rolellm select"}
    assert must <= offered, f"no --plan on {sorted(must - offered)}"
    # Training would be carried out by a plan (its work is not model calls); `models check` sends on its own.
    assert not offered & {"train", "merge", "models", "prepare", "pool chunk"}


def test_a_plan_made_for_other_settings_is_not_shown_beside_the_run(loopback, tmp_path, monkeypatch):
    """The plan kept in the folder is shown only by the run it planned: the same settings and models file."""
    monkeypatch.setenv(TEST_KEY_ENV, "sk-test-abcdef0123456789")
    loopback.responder = stand_in_responder
    models, cache = _models_file(tmp_path, loopback), tmp_path / "calls.sqlite"
    (step,) = modes()["roleinteract"].smoke_steps(tmp_path / "work")
    shared = ["--models-file", str(models), "--cache", str(cache)]
    assert rpbench(*step.args, *shared, "--plan").returncode == 0
    assert (step.out / "plan.json").is_file()
    models.write_text(models.read_text().replace("0.000004", "0.000008"))  # another price: another plan
    ran = rpbench(*step.args, *shared)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert json.loads((step.out / "manifest.json").read_text()).get("plan") is None
    assert "planned:" not in ran.stdout


def test_a_dialogue_that_may_end_early_is_planned_from_its_shortest_to_its_longest():
    """The first pass declines every offer to end (the high figures), the second takes the first (the low ones);
    a stage only the longer pass reaches has a low of 0, and what could be cached is counted in the shorter pass."""
    from rpbench.tasks.llm.planning import CallPlan
    from rpbench.tasks.llm.stand_in import stand_in_text

    schema = {"type": "object", "properties": {"next": {"enum": ["Ann", "END"]}}}
    assert '"END"' in stand_in_text([{"role": "user", "content": "x"}], schema, ending=True)
    assert '"Ann"' in stand_in_text([{"role": "user", "content": "x"}], schema)
    plan = CallPlan()

    def ask(stage: str, n: int, with_schema: bool) -> None:
        for k in range(n):
            msgs = [{"role": "user", "content": f"{stage} turn {k}"}]
            plan.stand_in(stage, "player", "openai/gpt-4o-mini", "openai", f"{stage}{k}", msgs,
                          schema if with_schema else None, 50, (1e-6, 4e-6), 1)

    plan.start()
    ask("talk", 6, True)
    ask("grade", 2, False)
    assert plan.endings_offered == 6
    plan.start(ending=True)
    ask("talk", 2, True)
    rows = {r["stage"]: r for r in plan.result()["stages"]}
    assert rows["talk"]["calls"] == [2, 6] and rows["grade"]["calls"] == [0, 2]
    assert rows["talk"]["cost_usd"][0] < rows["talk"]["cost_usd"][1]
    assert plan.result()["total"]["calls"] == [2, 8]
    # A free-text call offers its ending as the reply that ends it (CoSER's "Next Speaker: <END CHAT>").
    plan.start()
    said = plan.stand_in("next", "nsp", "openai/gpt-4o-mini", "openai", "n0", [{"role": "user", "content": "who?"}],
                         None, 50, None, 1, ends="Next Speaker: <END CHAT>")
    assert said["text"] != "Next Speaker: <END CHAT>" and plan.endings_offered == 1
    plan.start(ending=True)
    said = plan.stand_in("next", "nsp", "openai/gpt-4o-mini", "openai", "n0", [{"role": "user", "content": "who?"}],
                         None, 50, None, 1, ends="Next Speaker: <END CHAT>")
    assert said["text"] == "Next Speaker: <END CHAT>"


def test_a_plan_shows_what_it_counts_on_a_terminal_and_writes_nothing_elsewhere(monkeypatch):
    """A large run's plan takes a minute: on a terminal a status line says so and counts the requests; piped
    (logs, --json read by a script), nothing is added to the output."""
    import io
    import time

    from rich.console import Console

    from rpbench.flows.kit.running import plan
    from rpbench.tasks.llm.planning import CallPlan

    counts = iter(range(0, 10_000, 1_200))
    counted = CallPlan()
    monkeypatch.setattr(counted, "counted", lambda: next(counts))
    screen = io.StringIO()
    with plan._progress(counted, Console(file=screen, force_terminal=True, width=120)) as say:
        say("planning, second pass")
        deadline = time.monotonic() + 20  # the line is redrawn twice a second: wait for a redraw, not a time
        while "1,200 requests" not in screen.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert "planning, second pass: 1,200 requests counted" in screen.getvalue()
    piped = io.StringIO()
    with plan._progress(counted, Console(file=piped, force_terminal=False)) as say:
        say("planning")
    assert piped.getvalue() == ""


def test_a_plan_scores_nothing_and_draws_no_report(tmp_path, monkeypatch):
    """A report sends no request, so a plan does not score its stand-in replies nor draw their charts (a
    large share of a big plan's time): the mode's scoring hook is never called, and the plan is whole."""
    import rpbench.tasks.modes.roleinteract.analysis as analysis

    def must_not_score(**_options):
        raise AssertionError("a plan scored its stand-in replies")

    monkeypatch.setattr(analysis, "scored", must_not_score)
    ran = rpbench("roleinteract", "run", "--data", str(Path(__file__).parents[1] / "samples" / "roleinteract" /
                  "example.json"), "--model", "local/smollm2-135m", "--out", str(tmp_path / "o"), "--plan",
                  "--json")
    assert ran.returncode == 0, ran.stderr
    planned = json.loads(ran.stdout)
    assert planned["total"]["calls"] and {r["stage"] for r in planned["stages"]} == {"roleinteract-answers"}
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["plan.json"]  # no report.html, no viewer


def test_a_plan_s_total_names_the_roles_it_could_not_price():
    """The total sums the priced roles only: a role at no known price is named beside it, not counted free."""
    from rpbench.flows.kit.running.plan import plan_text

    row = {"stage": "answers", "role": "player", "model": "openai/lb", "calls": [4, 12], "cached_calls": 0,
           "prompt_tokens": [100, 300], "reply_tokens": [10, 90], "cost_usd": None}
    total = {"calls": [4, 12], "cached_calls": 0, "prompt_tokens": [100, 300], "reply_tokens": [10, 90],
             "cost_usd": 0.0, "cacheable_prompt_tokens": 0, "cacheable_share": 0.0}
    plan = {"stages": [row], "roles": [{"role": "player", "models": ["openai/lb"], "calls": [4, 12],
                                        "cost_usd": None}], "total": total, "notes": []}
    assert "USD 0.0000 (and player at no known price)" in plan_text(plan)
    plan["roles"][0]["cost_usd"] = [0.0, 0.0]
    assert "at no known price" not in plan_text(plan)
