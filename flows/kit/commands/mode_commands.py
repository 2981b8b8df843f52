"""`rpbench <mode> ...`: a mode's commands made from its spec's declarations (``flows.kit.front.run_command``):
each ``FlowCommand`` a command with its flow's settings as options that checks the input, runs the flow and
prints the lines the mode asks for."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping

import typer
from pydantic import BaseModel

from rpbench.flows.kit.commands.settings_commands import leaderboard_lines, run_evaluation, settings_command
from rpbench.flows.kit.front.refs import load_ref
from rpbench.flows.kit.front.registry import BenchmarkMode
from rpbench.flows.kit.front.run_command import Commands, FlowCommand, Group, Lines


def add_mode_commands(app: typer.Typer, mode: BenchmarkMode) -> None:
    """Add ``mode``'s commands to ``app``: its ``Commands``, or the function its spec names (``commands=
    "module:function"``, given the app)."""
    if mode.commands is None:
        return
    declared = load_ref(mode.commands)
    if isinstance(declared, Commands):
        _add(app, mode, declared, declared.commands)
    else:
        declared(app)


def _add(app: typer.Typer, mode: BenchmarkMode, declared: Commands,
         commands: Mapping[str, FlowCommand | Group | str]) -> None:
    for name, command in commands.items():
        if isinstance(command, Group):
            group = typer.Typer(help=command.help, no_args_is_help=True)
            _add(group, mode, declared, command.commands)
            app.add_typer(group, name=name)
        elif isinstance(command, str):
            app.command(name)(load_ref(f"{mode.package}.{command}"))
        else:
            app.command(name)(_flow_command(mode, declared, command))


def _flow_command(mode: BenchmarkMode, declared: Commands, command: FlowCommand) -> Callable[..., None]:
    if command.flow is None:
        (flow,) = mode.flows
    else:
        flow = command.flow
    model = load_ref(mode.settings[flow])
    if isinstance(command.lines, str):
        lines: Lines = load_ref(f"{mode.package}.{command.lines}")
    elif command.lines is not None:
        lines = command.lines
    else:  # the report is loaded once the run has ended: a mode's may sit beside its flow, which loads Prefect
        lines = lambda section: leaderboard_lines(section, mode.load_report().scoring.headline.name)  # noqa: E731

    with_settings = len(inspect.signature(lines).parameters) > 1  # lines(section, settings): needs them too

    def run(settings: BaseModel) -> None:
        run_evaluation(settings, mode.checks.get(flow), mode.flows[flow], command.section or flow,
                       (lambda section: lines(section, settings)) if with_settings else lines)

    run.__doc__ = model.__doc__
    run.rpbench_mode = declared.mode  # type: ignore[attr-defined]  # which mode's folders are its own
    run.rpbench_flows = declared.sharing(flow, mode.flows)  # type: ignore[attr-defined]
    return settings_command(model, run)


__all__ = ["add_mode_commands"]
