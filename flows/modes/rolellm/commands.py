"""RoleLLM's commands: `rpbench rolellm eval | context-instruct`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.front.commands import run_evaluation, settings_command, stages_line
from rpbench.flows.modes.rolellm.settings import (
    ContextInstructSettings,
    EvalSettings,
    GeneralSettings,
    ProfileSettings,
    SelectSettings,
)
from rpbench.tasks.reports.render import fmt


def _eval_lines(r: dict[str, Any]) -> Iterator[str]:
    for split, models in r.get("by_split", {}).items():
        for model, cells in models.items():
            yield f"{split} {model}: " + "  ".join(f"{k} {fmt(v, 1)}" for k, v in cells.items())
    for row in r.get("leaderboard", []):
        yield (f"{row['model']}: avg {fmt(row['avg'], 1)} [{fmt(row['ci_low'], 1)}, {fmt(row['ci_high'], 1)}]  "
               f"n={row['n']} failed={row['failed']}")
    for judge, systems in (r.get("win_rates") or {}).items():
        yield f"judge {judge}: " + "  ".join(f"{m} win rate {fmt(v['win_rate'], 1)}" for m, v in systems.items())


def evaluate(s: EvalSettings) -> None:
    """Models answer RoleBench questions in role (RoleGPT prompting: zsp, fsp or fsd with BM25-retrieved
    examples from the role's script); Rouge-L against the references per split (CUS, RAW, SPE, avg); with
    --judge, a ranking judge and win rates against a reference system."""
    run_evaluation(s, "rpbench.flows.modes.rolellm.checks:check_eval", "rpbench.flows.modes.rolellm.flows:rolellm_eval",
                   "rolellm", _eval_lines)


def context_instruct(s: ContextInstructSettings) -> None:
    """Role-specific questions with answers in the role's voice, generated from each role's script segments
    (completeness) and description (factualness); only High confidence kept, cleaned, de-duplicated with
    BM25; written in RoleBench's layout with instruction- and role-generalisation splits."""
    from rpbench.flows.kit.running.run import run_flow
    from rpbench.flows.modes.rolellm.checks import check_roles

    _, _, dropped = checked(check_roles, s)
    from rpbench.flows.modes.rolellm.flows import context_instruct as flow

    if dropped:
        typer.echo(f"left out (fewer than {s.min_turns} turns of their own): {', '.join(dropped)}")
    manifest = run_flow(flow, settings=s)
    c = manifest.get("context_instruct", {})
    for role, counts in c.get("counts", {}).items():
        typer.echo(f"{role}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    for rel, n in c.get("files", {}).items():
        typer.echo(f"{s.out}/{rel}: {n} rows")
    for note in c.get("notes", []):
        typer.echo(note)
    typer.echo(stages_line(manifest))


def general(s: GeneralSettings) -> None:
    """RoleBench-general: short general instructions (BM25 de-duplicated) answered six times by every role in
    role (RoleGPT prompting): five answers are references, the sixth the RoleGPT baseline; the original answers
    are the RAW references. Written in RoleBench's layout with both splits."""
    from rpbench.flows.modes.rolellm.checks import check_general

    checked(check_general, s)
    from rpbench.flows.kit.running.run import run_flow
    from rpbench.flows.modes.rolellm.flows import rolebench_general

    manifest = run_flow(rolebench_general, settings=s)
    g = manifest.get("general", {})
    typer.echo(f"instructions: {g.get('instructions')}; answers: "
               + ", ".join(f"{k} {v}" for k, v in g.get("counts", {}).items()))
    for rel, n in g.get("files", {}).items():
        typer.echo(f"{s.out}/{rel}: {n} rows")
    typer.echo(f"{s.out}/raw.jsonl: the RAW references (rpbench rolellm eval --raw)")
    typer.echo(stages_line(manifest))


def profile(s: ProfileSettings) -> None:
    """A role file for context-instruct, general and eval: the generator describes the role in the third person
    (without its name), turns that into the second person, and lists its catchphrases."""
    from rpbench.flows.kit.running.run import run_flow
    from rpbench.flows.modes.rolellm.flows import role_profile

    manifest = run_flow(role_profile, settings=s)
    p = manifest.get("profile", {})
    typer.echo(f"role file: {p.get('role_file')} (catchphrases: {', '.join(p.get('catchphrases') or []) or 'none'})")
    typer.echo(stages_line(manifest))


def select(s: SelectSettings) -> None:
    """Role selection: for each script, its main character and how distinct that character's speech is
    (not, somewhat, very, extremely); the top two levels are listed for auditing."""
    from rpbench.flows.kit.running.run import run_flow
    from rpbench.flows.modes.rolellm.flows import read_scripts, role_selection

    read_scripts(s.scripts)
    manifest = run_flow(role_selection, settings=s)
    chosen = manifest.get("selection", {}).get("chosen", [])
    typer.echo(f"worth auditing: {', '.join(c for c in chosen if c) or 'none'}; table: {s.out}/selection.md")
    typer.echo(stages_line(manifest))


def add_commands(app: typer.Typer) -> None:
    app.command("eval")(settings_command(EvalSettings, evaluate))
    app.command("context-instruct")(settings_command(ContextInstructSettings, context_instruct))
    app.command("general")(settings_command(GeneralSettings, general))
    app.command("profile")(settings_command(ProfileSettings, profile))
    app.command("select")(settings_command(SelectSettings, select))
