"""The ``rpbench`` command line.

Each command validates its input, runs one flow, and prints where the results
are. Input errors print one line naming the file, record and field, and exit
with status 2; there is never a traceback for a user's mistake.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from rpbench.flows.cli import build as cli_build
from rpbench.flows.cli import characters as cli_characters
from rpbench.flows.cli import evaluate as cli_eval
from rpbench.flows.cli import pool as cli_pool
from rpbench.flows.cli.common import CacheOpt, ModelsOpt, opt, run_flow
from rpbench.flows.kit.environment import setup_environment
from rpbench.tasks.core.errors import InputError

app = typer.Typer(
    help="Build and run role-playing benchmarks for language models (FURINA-Builder and friends), on Prefect.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(cli_pool.app, name="pool")
app.add_typer(cli_characters.app, name="characters")
app.command("build")(cli_build.build)
app.command("export")(cli_build.export)
app.command("eval")(cli_eval.eval_command)
app.command("validate")(cli_eval.validate_command)


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="Folder for the run's tables and manifest.")] = Path("runs/demo"),
    models: ModelsOpt = None,
    cache: CacheOpt = None,
) -> None:
    """The whole pipeline on the embedded local model (no keys, no network): pool, benchmark, evaluation."""
    from rpbench.flows.modes.furina.demo import demo as demo_flow
    from rpbench.tasks.reports.summary import run_summary_markdown

    manifest = run_flow(demo_flow, out=str(out), models=opt(models), cache=opt(cache))
    typer.echo("")
    typer.echo(run_summary_markdown(manifest, str(out / "eval")))
    for r in manifest.get("evaluation", {}).get("leaderboard", []):
        typer.echo(f"{r['model']}: score {r['score']:.1f} [{r['ci_low']:.1f}, {r['ci_high']:.1f}] on {r['n']} items")
    typer.echo(f"Pool: {out}/pool  Benchmark: {out}/bench  Evaluation: {out}/eval")
    typer.echo(f"Report: {out}/eval/report.html")


@app.command("models")
def show_models(models: ModelsOpt = None) -> None:
    """Show which model and settings each role resolves to."""
    from rpbench.tasks.llm import load_models_config

    config = load_models_config(models)
    typer.echo(f"default: {config.default.model} (temperature={config.default.temperature})")
    for role, spec in sorted(config.roles.items()):
        where = f" at {spec.api_base}" if spec.api_base else ""
        procs = f", processes={spec.processes}" if spec.processes > 1 else ""
        typer.echo(f"{role}: {spec.model}{where} (temperature={spec.temperature}, max_tokens={spec.max_tokens}"
                   f", max_concurrency={spec.max_concurrency}{procs})")


def main() -> None:
    """Entry point: input errors become one line and exit status 2, never a traceback."""
    import click

    code = 0
    setup_environment()
    try:
        app(standalone_mode=False)
    except InputError as exc:
        typer.secho(f"error: {exc}", err=True, fg=typer.colors.RED)
        code = 2
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except (KeyboardInterrupt, click.exceptions.Abort):
        typer.echo("interrupted: completed calls are cached; run the same command again to resume", err=True)
        code = 130
    sys.stdout.flush()
    sys.stderr.flush()
    # Prefect's background services may print flush errors at interpreter exit; our work is written, so leave now.
    os._exit(code)


if __name__ == "__main__":
    main()
