"""The wiring every mode shares, written once in the kit: the systems a run scores (a model asked, or answers
read from a file) and the input check, run once per run whether the command or the flow asks first."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from pydantic import Field

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.front.settings import InputPaths, RunSettings
from rpbench.flows.kit.front.systems import System, read_systems
from rpbench.samples import sample_path
from rpbench.tasks.core.errors import InputError
from tests.helpers import TEST_KEY_ENV, loopback_models_file, rpbench, stand_in_responder

ROOT = Path(__file__).resolve().parents[1]


def test_systems_are_the_models_then_the_answer_files_each_with_its_stage_parameters(tmp_path):
    answers = tmp_path / "mine.jsonl"
    answers.write_text("{}\n")
    systems = read_systems({"Big Model": "player"}, [f"ours={answers}", str(answers)])
    assert systems == [System("Big Model", role="player"), System("ours", answers=str(answers)),
                       System("mine", answers=str(answers))]
    assert systems[0].params() == {"name": "Big Model", "role": "player", "given": None, "shard": "big-model"}
    with pytest.raises(InputError, match="--answers: 'Big Model' is also a --player; name the talks otherwise"):
        read_systems({"Big Model": "player"}, [f"Big Model={answers}"], model_option="--player", what="talks")
    with pytest.raises(InputError, match="no such file"):
        read_systems({}, [str(tmp_path / "none.jsonl")])


class _Settings(RunSettings):
    data: InputPaths = Field(default_factory=list)


def test_a_check_runs_once_for_the_same_settings_and_again_when_its_file_changes(tmp_path):
    data = tmp_path / "data.json"
    data.write_text("[]")
    seen: list[str] = []

    def check(s: _Settings) -> int:
        seen.append(s.data[0])
        return len(seen)

    s = _Settings(data=[str(data)])
    assert checked(check, s) == checked(check, s) == 1
    data.write_text("[1, 2]")  # the file changed: checked again
    assert checked(check, s) == 2
    assert checked(check, s.model_copy(update={"max_cost": 5.0})) == 3  # other settings: checked again


class _EvalSettings(_Settings):
    answers: list[str] = Field(default_factory=list)


def test_an_answers_file_given_as_name_equals_file_is_checked_again_when_it_changes(tmp_path):
    """A served process checks every triggered run: an answers file edited since (named NAME=FILE, which no
    path field marks) must be read again, not taken as the earlier run's."""
    answers = tmp_path / "mine.jsonl"
    answers.write_text('{"id": "1", "answer": "a"}\n')
    seen: list[int] = []

    def check(s: _EvalSettings) -> int:
        seen.append(1)
        return len(seen)

    s = _EvalSettings(answers=[f"mine={answers}"])
    assert checked(check, s) == checked(check, s) == 1
    answers.write_text('{"id": "1", "answer": "a longer answer"}\n')
    assert checked(check, s) == 2


def test_a_command_and_its_flow_read_the_input_once(harness, loopback, tmp_path, monkeypatch):
    """The command checks before any flow starts; the flow, called from it, gets the same result without
    reading the data and the answers again."""
    from rpbench.flows.modes.roleinteract import checks, flows

    calls = []
    original = checks.check_run

    @functools.wraps(original)
    def counted(s):
        calls.append(s)
        return original(s)

    monkeypatch.setattr(checks, "check_run", counted)
    monkeypatch.setattr(flows, "check_run", counted)
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = stand_in_responder
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    ran = rpbench("roleinteract", "run", "--data", str(sample_path("roleinteract", "example.json")),
                  "--model", "roleinteract-player", "--limit", "1", "--out", str(tmp_path / "o"),
                  "--models-file", str(models), "--cache", str(tmp_path / "c.sqlite"), "--resamples", "40")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert len(calls) == 1


def _check_calls_in(path: Path) -> list[tuple[str, str]]:
    """(function called, the function it is called from) for each call in a module of a function it imports
    from a mode's ``checks`` module."""
    tree = ast.parse(path.read_text())
    imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and (n.module or "").endswith(".checks") for a in n.names}
    out = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in imported:
                    out.append((node.func.id, fn.name))
    return out


def test_no_flow_or_command_calls_a_mode_check_but_through_checked():
    """A mode's run checks (check_run, check_eval, check_models, ...) are called only as ``checked(check, s)``,
    so no run reads its inputs twice."""
    names = set()
    for path in (ROOT / "flows" / "modes").glob("*/checks.py"):
        names |= {n.name for n in ast.parse(path.read_text()).body
                  if isinstance(n, ast.FunctionDef) and n.name.startswith("check")}
    assert {"check_run", "check_eval", "check_models"} <= names
    direct = [(str(p.relative_to(ROOT)), called, caller)
              for p in [*(ROOT / "flows" / "modes").glob("*/flows.py"), *(ROOT / "flows" / "modes").glob("*/commands.py"),
                        *(ROOT / "flows" / "modes" / "furina").glob("*.py")]
              if p.name != "checks.py"
              for called, caller in _check_calls_in(p) if called in names]
    assert not direct, direct


def test_flows_are_handed_their_stages_and_served_with_settings_alone():
    """A flow declared ``def f(s, stages)`` gets its run's Stages from ``flow_body``; Prefect sees (and a
    deployment passes) ``settings`` only. Only FURINA's character synthesis, whose stages write into a run
    folder of its own, still makes them."""
    from prefect.utilities.callables import parameter_schema

    from rpbench.flows.kit.front.registry import modes

    made_by_hand = [str(p.relative_to(ROOT)) for p in (ROOT / "flows" / "modes").rglob("*.py")
                    if "Stages(" in p.read_text()]
    assert made_by_hand == ["flows/modes/furina/characters.py"], made_by_hand
    for mode in modes().values():
        for flow in mode.load_flows().values():
            assert list(parameter_schema(flow).model_dump()["properties"]) == ["settings"], flow.name


def test_each_mode_names_its_judges_in_its_settings_and_the_kit_reads_them():
    """judge_roles / judge_fields say who judges; the kit's judging() gives them after the models under test
    (the self-judging check and the plan read it), a list field's every name included."""
    from rpbench.flows.modes.characterbench.settings import CharacterBenchSettings
    from rpbench.flows.modes.dmt.settings import DmtSettings
    from rpbench.flows.modes.pingpong.settings import PingPongSettings

    data = str(sample_path("characterbench", "engagement_test.json"))
    assert CharacterBenchSettings(data=[data], models=["a"], judge="openai/o3").judging() == (["a"], ["openai/o3"])
    pingpong = PingPongSettings(settings=str(sample_path("pingpong", "settings.yaml")), models=["a"],
                                judges=["j1", "j2"])
    assert pingpong.judging() == (["a"], ["j1", "j2"])
    assert DmtSettings(seeds=str(sample_path("dmt", "seeds.yaml")), models=["a"]).judging() == (["a"], ["dmt-judge"])


def test_the_report_s_section_on_judges_against_people_is_the_kit_s():
    from rpbench.tasks.core.records import JudgeAgreement
    from rpbench.tasks.reports.judges import agreement_section
    from rpbench.tasks.reports.viewer import versus_people

    assert agreement_section([], "") is None  # a mode with no people to compare with says nothing
    assert agreement_section([], "no human scores.").markdown == "Not measured: no human scores."
    row = JudgeAgreement(benchmark="b", judge="j", group="g", language="en", n=3, pearson=0.5, pearson_low=0.1,
                         pearson_high=0.9, spearman=None, spearman_low=None, spearman_high=None, kendall=None,
                         kendall_low=None, kendall_high=None, exact=1.0, exact_low=1.0, exact_high=1.0)
    section = agreement_section([row], "unused")
    assert section is not None and "| j | g | en | 3 | 0.500 [0.10, 0.90]" in section.markdown
    assert [versus_people(3, 3), versus_people(2, 4), versus_people(None, 4)] == ["agrees", "off by 2", "-"]
