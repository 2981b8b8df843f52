"""The ``rpbench`` command line.

Each registered benchmark mode adds its commands (FURINA's at the top level);
``models`` and ``modes`` are shared. Input errors print one line naming the
file, record and field (or the unknown name and the names there are), and exit
with status 2; there is never a traceback for a user's mistake.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Sequence
from typing import Annotated

import typer

from rpbench.flows.cli.models_command import ModelsSettings, models
from rpbench.flows.cli.modes_group import ModesGroup, tidy_help
from rpbench.flows.kit.commands.settings_commands import settings_command
from rpbench.flows.kit.front.registry import modes
from rpbench.flows.kit.front.settings import ModelsFileSettings
from rpbench.flows.kit.running import interrupts
from rpbench.flows.kit.running.environment import setup_environment
from rpbench.flows.suite.commands import add_commands as suite_commands
from rpbench.flows.training.commands import add_commands as training_commands
from rpbench.tasks.core.errors import InputError, ModelUnusable, RunFailed


def prepare(s: ModelsFileSettings) -> None:
    """Derive once what the local models need (re-encoded weights, the tokenizer for token counts).

    Done on first use anyway; the set-up command runs it so that a first run does not wait for it.
    """
    import time

    from rpbench.flows.kit.front.registry import models_config
    from rpbench.tasks.llm.local.gguf_requantize import requantized
    from rpbench.tasks.llm.local.models import EMBEDDED, local_model, register_local_models, weights_path
    from rpbench.tasks.llm.local.tokens import tokenizer

    config = models_config(s.models_file)
    register_local_models(config.local_models)
    for name in sorted({EMBEDDED, *config.local_models}):
        spec = local_model(name)
        weights = weights_path(spec)
        if spec.requantize and weights.is_file():
            started = time.monotonic()
            path = requantized(weights, spec.requantize)
            typer.echo(f"local/{name}: {path} ({time.monotonic() - started:.1f} s)")
    started = time.monotonic()
    tokenizer()
    typer.echo(f"tokenizer for token counts: ready ({time.monotonic() - started:.1f} s)")


def trigger_run(
    deployment: Annotated[str, typer.Argument(help="FLOW/DEPLOYMENT, as `prefect deployment ls` lists them "
                                                   "(e.g. rpbench-evaluate/nightly-eval).")],
    param: Annotated[list[str] | None, typer.Option("--param", help="A settings field as key=value (JSON values "
                                                                   "such as 3 or [1,2] are read as JSON; a key "
                                                                   "given twice makes a list). Repeat.")] = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Wait for the run to finish.")] = True,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0, help="Stop waiting after this many seconds.")
                       ] = None,
) -> None:
    """Start a run of a served deployment on the Prefect server at PREFECT_API_URL, with settings fields over the
    deployment's own; exit 1 if the run does not complete."""
    import math

    from rpbench.deployments.trigger import parse_params, trigger

    if timeout is not None and not math.isfinite(timeout):
        raise InputError(f"--timeout: {timeout} is not a number of seconds (leave it out to wait until the end)")
    run = trigger(deployment, parse_params(param or []), wait=wait, timeout=timeout)
    typer.echo(f"{run.deployment}: flow run {run.flow_run_name} ({run.flow_run_id}) {run.state_name}")
    if run.ui_url:
        typer.echo(f"in the Prefect UI: {run.ui_url}")
    if run.out:
        typer.echo(f"run folder: {run.out}")
    if run.unserved and run.state_name in ("Scheduled", "Late", "Pending"):
        typer.secho(f"warning: nothing is picking up {run.deployment}: no worker polls its work pool and no "
                    "`rpbench deploy` process serves it, so the run waits until one starts", err=True,
                    fg=typer.colors.YELLOW)
    if wait and not run.completed:
        raise typer.Exit(1)


def report_runs(
    runs: Annotated[list[str], typer.Argument(help="Run folders (each with its manifest.json), e.g. runs/ri runs/pp.")],
    out: Annotated[str, typer.Option("--out", help="Where index.html and samples.html go.")] = "runs/index",
) -> None:
    """One page over run folders: each run's outcome and leaderboard with links to its report and sample viewer,
    and samples.html with every run's samples, the answers to the same item side by side."""
    from rpbench.storage.folder_lock import folder_lock
    from rpbench.storage.user_files import check_output_folder
    from rpbench.tasks.reports.index import write_index

    try:
        check_output_folder(out)
    except ValueError as exc:
        raise InputError(f"--out: {exc}") from None
    with folder_lock(out, "--out"):  # not into a folder a run is writing
        written = write_index(runs, out)
    for kind, path in written.items():
        typer.echo(f"{kind}: {path}")


def deploy(
    pool: Annotated[str | None, typer.Option("--pool", help="Register the deployments in this process work pool "
                                                          "(created if missing) and return, for Prefect workers "
                                                          "(`prefect worker start --pool NAME`) to run; without "
                                                          "it, serve them from this process.")] = None,
) -> None:
    """Serve every rpbench flow as a Prefect deployment (on demand, plus the example schedules: a nightly
    evaluation and a weekly pool refresh) on the server at PREFECT_API_URL; runs until stopped (Ctrl-C).
    With --pool, register them in a work pool instead."""
    from prefect.settings import PREFECT_API_URL

    from rpbench.deployments.serve import main as serve
    from rpbench.deployments.serve import register_in_pool
    from rpbench.deployments.trigger import check_server

    if PREFECT_API_URL.value():
        check_server()  # a server that does not answer is one line, not Prefect's traceback
    if pool is None:
        serve()
        return
    if not PREFECT_API_URL.value():
        raise InputError("deploy --pool: PREFECT_API_URL is not set; workers need a Prefect server to poll "
                         "(prefect server start, or python -m rpbench.deployments.cluster)")
    names = register_in_pool(pool)
    typer.echo(f"{len(names)} deployments in work pool '{pool}'; start workers with: "
               f"prefect worker start --pool {pool}")


def show_modes() -> None:
    """List the benchmark modes there are, their roles and their metrics."""
    for mode in modes().values():
        metrics = ", ".join(m.name for m in mode.load_report().scoring.metrics)
        typer.echo(f"{mode.name}: {mode.description}\n  roles: {', '.join(mode.roles)}\n  metrics: {metrics}")


def choose_runner(
    runner: Annotated[str | None, typer.Option("--runner", help="Where stage shards run: threads (default) or dask "
                                                           "(sets RPBENCH_RUNNER).")] = None,
    dask_address: Annotated[str | None, typer.Option("--dask-address", help="A Dask scheduler (tcp://host:8786) "
                                                                            "for --runner dask; default: a local "
                                                                            "cluster per flow run.")] = None,
    dask_workers: Annotated[int | None, typer.Option("--dask-workers", min=1, help="Worker processes of the local "
                                                                                   "Dask cluster (default 2).")] = None,
) -> None:
    """Options before the command: where the flow's stage shards run (see docs/operating/scaling.md)."""
    from rpbench.flows.kit.scale.runners import check_dask_address, chosen_runner

    # The environment carries the choice, so that flow runs in other processes (a served deployment's
    # subprocess) see the same as this one.
    for name, value in (("RPBENCH_RUNNER", runner), ("RPBENCH_DASK_ADDRESS", dask_address),
                        ("RPBENCH_DASK_WORKERS", dask_workers)):
        if value is not None:
            os.environ[name] = str(value)
    chosen_runner()  # an unknown runner is one line now, not when the first flow starts
    if dask_address is not None:
        check_dask_address(dask_address)


def make_app() -> typer.Typer:
    app = typer.Typer(
        help="Build and run role-playing benchmarks for language models (FURINA-Builder and friends), on Prefect.",
        no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
        callback=choose_runner, cls=ModesGroup,
    )
    app.command("models")(settings_command(ModelsSettings, models, plans=False))
    app.command("modes")(show_modes)
    app.command("trigger")(trigger_run)
    app.command("report")(report_runs)
    from rpbench.flows.cli.leaderboard_command import leaderboard

    app.command("leaderboard")(leaderboard)
    app.command("deploy")(deploy)
    app.command("prepare")(settings_command(ModelsFileSettings, prepare, starts_workers=False))
    training_commands(app)
    suite_commands(app)
    from rpbench.flows.annotation.commands import app as annotate

    app.add_typer(annotate, name="annotate")
    from rpbench.flows.cli.releases_command import app as releases

    app.add_typer(releases, name="releases")
    return app


def make_cli() -> ModesGroup:
    """The whole command line as a click group, the modes' commands as placeholders until used."""
    group = typer.main.get_group(make_app())
    assert isinstance(group, ModesGroup)
    tidy_help(group)
    group.add_modes()
    return group


# Errors of the machine rather than of rpbench: a full disk, a folder one may not write. One line naming the path,
# as for bad input; any other OSError is a fault of ours and keeps its traceback.
_MACHINE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS})


def describe_machine_error(exc: OSError) -> str:
    where = f": {exc.filename}" if exc.filename else ""
    advice = (" (free some space and run the same command again: finished work is kept)"
              if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "")
    return f"{exc.strerror or exc}{where}{advice}"


def _interrupted() -> int:
    interrupts.say(interrupts.interrupted_line())  # even to a stream nobody reads any more
    return interrupts.exit_code()


def _plain_usage_error(message: str) -> str:
    """typer reads a choice through pydantic, whose wording leaks into its message ("Value error, 'numbr' is not
    one of 'json', 'number'."): drop it, and name the likely choice as every other unknown name does."""
    from rpbench.tasks.core.errors import close_match

    message = message.removeprefix("Value error, ")
    wrong = re.match(r"'([^']*)' is not one of (.*)\.$", message)
    near = close_match(wrong[1], re.findall(r"'([^']*)'", wrong[2])) if wrong else None
    return f"{message[:-1]} (did you mean '{near}'?)." if near else message


def run_cli(args: Sequence[str]) -> int:
    """Run one command and return its exit status: 0, 2 for bad input (one line, no traceback), the
    command's own status otherwise. Tests call this in-process; ``main`` calls it and exits."""
    from typer.exceptions import TyperException

    code = 0
    try:
        returned = make_cli().main(list(args), prog_name="rpbench", standalone_mode=False)
        # In this mode click hands back a command's ``typer.Exit(code)`` as its return value; typer makes an
        # interrupt such an Exit(130), which says nothing of the signal or of what was kept.
        if interrupts.received():
            code = _interrupted()
        elif isinstance(returned, int):
            code = returned
    except InputError as exc:
        typer.secho(f"error: {exc}", err=True, fg=typer.colors.RED)
        code = 2
    except RunFailed as failed:  # the work is written, but lost more to failures than the settings allow
        for line in failed.lines():
            typer.secho(line, err=True, fg=typer.colors.RED)
        code = 3
    except ModelUnusable as exc:  # a refused or missing key, an unknown model: the run stopped at its first reply
        typer.secho(f"error: {exc}", err=True, fg=typer.colors.RED)
        code = 3
    except typer.Exit as exc:
        code = exc.exit_code
    except (KeyboardInterrupt, typer.Abort):
        code = _interrupted()
    except SystemExit:
        # Prefect's console handler exits 1 when stderr has gone (a parent that died of the same signal, its
        # pipe closed): a stopped run still ends with the signal's status.
        if not interrupts.received():
            raise
        code = _interrupted()
    except OSError as exc:
        if exc.errno not in _MACHINE_ERRNOS:
            raise
        typer.secho(f"error: {describe_machine_error(exc)}", err=True, fg=typer.colors.RED)
        code = 1
    except TyperException as exc:  # usage errors (typer's own click): its message and usage, status 2
        if isinstance(getattr(exc, "message", None), str):
            exc.message = _plain_usage_error(exc.message)
        exc.show()  # type: ignore[attr-defined]
        code = getattr(exc, "exit_code", 2)
    return code


def main() -> None:
    """Entry point: run the command and exit with its status."""
    from rpbench.flows.kit.running.environment import command_process, shutdown_prefect

    setup_environment()
    command_process()
    interrupts.install()
    try:
        code = run_cli(sys.argv[1:])
    finally:
        # Drain Prefect's log and event workers and stop its temporary server (if a flow started one) here, once
        # per process: a test or notebook running several commands in one process keeps one server.
        shutdown_prefect()
    sys.stdout.flush()
    sys.stderr.flush()
    # Prefect's background services may print flush errors at interpreter exit; our work is written, so leave now.
    os._exit(code)


if __name__ == "__main__":
    main()
