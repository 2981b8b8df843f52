"""RoleLLM as a benchmark mode: RoleGPT prompting with retrieved examples, Context-Instruct data, Rouge-L."""

from __future__ import annotations

from pathlib import Path

from rpbench.flows.kit.front.registry import BenchmarkMode, SmokeStep, one_run
from rpbench.samples import sample_path
from rpbench.tasks.modes.rolellm.roles import ROLES

FLOWS = "rpbench.flows.modes.rolellm.flows"
TABLES = "rpbench.tasks.modes.rolellm.tables"


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
    item_table=f"{TABLES}:ROW_SCORES",
    report="rpbench.tasks.modes.rolellm.analysis:REPORT",
    flows={"rolellm-eval": f"{FLOWS}:rolellm_eval", "rolellm-context-instruct": f"{FLOWS}:context_instruct",
           "rolellm-general": f"{FLOWS}:rolebench_general", "rolellm-profile": f"{FLOWS}:role_profile",
           "rolellm-select": f"{FLOWS}:role_selection"},
    checks={"rolellm-eval": "rpbench.flows.modes.rolellm.checks:check_eval",
            "rolellm-context-instruct": "rpbench.flows.modes.rolellm.checks:check_roles",
            "rolellm-general": "rpbench.flows.modes.rolellm.checks:check_general"},
    settings={"rolellm-eval": "rpbench.flows.modes.rolellm.settings:EvalSettings"},
    commands="rpbench.flows.modes.rolellm.commands:add_commands",
    tables=(f"{TABLES}:QUESTIONS", f"{TABLES}:ANSWERS", f"{TABLES}:ROW_SCORES", f"{TABLES}:RANKINGS",
            f"{TABLES}:TRIPLETS",),
    smoke=_smoke,
    suite=one_run("rolellm-eval"),
    training_data="rpbench.tasks.modes.rolellm.training:ROLEBENCH",
)
