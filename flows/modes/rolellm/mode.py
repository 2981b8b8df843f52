"""RoleLLM as a benchmark mode: RoleGPT prompting with retrieved examples, Context-Instruct data, Rouge-L."""

from __future__ import annotations

from pathlib import Path

from rpbench.flows.kit.front.registry import BenchmarkMode, SmokeStep, one_run
from rpbench.flows.kit.front.run_command import Commands, FlowCommand
from rpbench.samples import sample_path
from rpbench.tasks.modes.rolellm.roles import ROLES


def _smoke(work: Path) -> list[SmokeStep]:
    """Context-Instruct on the shipped roles (small batches), then two models and a judge on the shipped
    RoleBench sample."""
    ci, ev = work / "context-instruct", work / "rolellm"
    return [
        SmokeStep("context-instruct", ("rolellm", "context-instruct", "--role", str(sample_path("rolellm", "roles")),
                                       "--per-description-call", "3", "--description-calls", "2",
                                       "--min-candidates", "0", "--out", str(ci)), ci),
        SmokeStep("rolellm-eval", ("rolellm", "eval", "--data", str(sample_path("rolellm", "rolebench")), "--model",
                                   "rolellm-player", "--model", "judge", "--judge", "rolellm-judge", "--limit", "2",
                                   "--raw", str(sample_path("rolellm", "rolebench", "raw-eng.jsonl")),
                                   "--out", str(ev), "--resamples", "200"), ev),
    ]



ROLELLM = BenchmarkMode(
    name="rolellm",
    description="RoleLLM: models answer RoleBench questions in role (RoleGPT prompting with BM25-retrieved "
                "examples), scored by Rouge-L (CUS, RAW, SPE) and a ranking judge; Context-Instruct makes "
                "role-specific questions from a role's own script.",
    roles=ROLES,
    item_table="ROW_SCORES",
    flows={"rolellm-eval": "rolellm_eval", "rolellm-context-instruct": "context_instruct",
           "rolellm-general": "rolebench_general", "rolellm-profile": "role_profile",
           "rolellm-select": "role_selection"},
    checks={"rolellm-eval": "check_eval", "rolellm-context-instruct": "check_roles",
            "rolellm-general": "check_general", "rolellm-select": "check_select"},
    settings={"rolellm-eval": "EvalSettings", "rolellm-context-instruct": "ContextInstructSettings",
              "rolellm-general": "GeneralSettings", "rolellm-profile": "ProfileSettings",
              "rolellm-select": "SelectSettings"},
    commands=Commands("rolellm", {
        "eval": FlowCommand("rolellm-eval", "commands:eval_lines", "rolellm"),
        "context-instruct": FlowCommand("rolellm-context-instruct", "commands:context_instruct_lines",
                                        "context_instruct"),
        "general": FlowCommand("rolellm-general", "commands:general_lines", "general"),
        "profile": FlowCommand("rolellm-profile", "commands:profile_lines", "profile"),
        "select": FlowCommand("rolellm-select", "commands:select_lines", "selection")}),
    releases="release:RELEASE",
    smoke=_smoke,
    suite=one_run("rolellm-eval"),
    training_data="training:ROLEBENCH",
)
