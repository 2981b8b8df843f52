"""`rpbench suite run` and `rpbench suite show`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from rpbench.flows.kit.commands.settings_commands import settings_command
from rpbench.flows.suite.settings import SuiteSettings
from rpbench.tasks.core.errors import RunFailed
from rpbench.tasks.reports.render import fmt


def run(s: SuiteSettings) -> None:
    """Every benchmark of a suite file for the same models, then one profile of them.

    Each mode of the suite file (default: the shipped samples of every benchmark) runs in its own folder
    under --out. The profile gives each model's headline per benchmark with its interval and its percentile
    among the models run, each benchmark's sub-scores, Kendall's tau between the benchmarks' rankings (three
    models or more), and each judge's agreement with people where a benchmark has human scores. A mode that
    fails does not stop the others; the suite then exits 3."""
    from rpbench.flows.suite.plan import check_suite

    check_suite(s)  # a typo in the suite file is one line here, before Prefect starts
    from rpbench.flows.kit.running.run import run_flow
    from rpbench.flows.suite.flow import suite

    try:
        manifest = run_flow(suite, settings=s)
    except RunFailed as failed:  # a mode failed: the others' results and the profile are written, and shown
        from rpbench.storage.runs import RunDir

        _echo_suite(RunDir(Path(failed.out)).read_manifest(), s)
        raise
    _echo_suite(manifest, s)


def _echo_suite(manifest: dict[str, Any], s: SuiteSettings) -> None:
    import pyarrow.parquet as pq

    r = manifest.get("suite", {})
    for mode, m in r.get("modes", {}).items():
        typer.echo(f"{mode}: {m['status']}" + (f" ({'; '.join(m['reasons'])})" if m["reasons"] else "")
                   + f", {m['calls_sent']} calls sent, {m['folder']}")
    profile = Path(s.out) / "profile.parquet"
    if profile.is_file():
        for row in pq.read_table(profile).to_pylist():
            typer.echo(f"{row['model']} {row['benchmark']}: {row['metric']} {fmt(row['score'])} "
                       f"[{fmt(row['ci_low'])}, {fmt(row['ci_high'])}] percentile {fmt(row['percentile'], 0)}")
    if r.get("least_agreeing"):
        typer.echo(f"least in agreement with the other benchmarks: {r['least_agreeing']}")
    else:
        typer.echo(f"agreement: {r.get('agreement')}")
    typer.echo(f"report: {r.get('report')}")
    typer.echo(f"samples: {r.get('samples')}")


def show(suite: str = typer.Argument(None, help="Suite file (TOML). Default: the shipped one.")) -> None:
    """Print a suite file (the shipped default when none is given): a starting point for your own. The shipped
    one is printed with its samples' paths made absolute, so a copy saved anywhere runs as it is."""
    import json
    import re

    from rpbench.flows.suite.plan import read_suite_file
    from rpbench.flows.suite.settings import DEFAULT_SUITE

    path = Path(suite or DEFAULT_SUITE)
    read_suite_file(path)  # a file it cannot read is one line, not a listing of a broken file
    text = path.read_text(encoding="utf-8")
    if suite is None:
        # Its paths are relative to where it is installed; `suite show > my-suite.toml` puts the copy elsewhere.
        text = re.sub(r'"(\.\.?/[^"]+)"', lambda m: json.dumps(str((path.parent / m[1]).resolve())), text)
    typer.echo(text, nl=False)


def add_commands(app: typer.Typer) -> None:
    group = typer.Typer(help="One or more models across every benchmark mode: a profile, and how the benchmarks "
                             "agree.", no_args_is_help=True)
    group.command("run")(settings_command(SuiteSettings, run))
    group.command("show")(show)
    app.add_typer(group, name="suite")
