"""A mode's commands made from its spec: each command that runs one of its flows is a line, not a function.

Light to import (a mode's spec names them, and every spec is read for `rpbench --help`): the commands' pieces
load when the mode's commands are.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

Lines = Callable[..., Iterable[str]]  # (section) or (section, settings)


@dataclass(frozen=True)
class FlowCommand:
    """A command that runs one of the mode's flows (``flow``, its short name in the spec; none: the mode's only
    flow): the options from the flow's settings, the help from the settings' docstring, the mode's input check
    of that flow first, then ``lines`` (a function of the flow's section of the manifest, and of the settings if
    it takes two arguments, or ``"module:function"`` under the mode's package; by default the leaderboard's
    headline with its interval and each judge's agreement with people), what the run did, and where its report
    is. ``section``: the manifest's section, by default the flow's name."""

    flow: str | None = None
    lines: Lines | str | None = None
    section: str | None = None


@dataclass(frozen=True)
class Group:
    """Commands under one name (``rpbench furina pool build``), with the group's help."""

    help: str
    commands: Mapping[str, FlowCommand | str]


class Commands:
    """A mode's ``commands``: by name, a ``FlowCommand``, a ``Group`` of them, or ``"module:function"`` under
    the mode's package (a Typer command function, such as DMT's ``agreement``)."""

    def __init__(self, mode: str, commands: Mapping[str, FlowCommand | Group | str]) -> None:
        self.mode, self.commands = mode, dict(commands)

    def __call__(self, app: typer.Typer) -> None:
        from rpbench.flows.kit.front.registry import get_mode

        self._add(app, get_mode(self.mode), self.commands)

    def _add(self, app: typer.Typer, found: Any, commands: Mapping[str, FlowCommand | Group | str]) -> None:
        import typer

        from rpbench.flows.kit.front.registry import load_ref

        for name, command in commands.items():
            if isinstance(command, Group):
                group = typer.Typer(help=command.help, no_args_is_help=True)
                self._add(group, found, command.commands)
                app.add_typer(group, name=name)
            elif isinstance(command, str):
                app.command(name)(load_ref(f"{found.package}.{command}"))
            else:
                app.command(name)(self._flow_command(found, command))

    def _sharing(self, flow: str, flows: Mapping[str, str]) -> set[str]:
        """The flows whose folders ``flow`` may write into: its own (a rerun continues there), and those a
        command shares a folder with by writing another flow's manifest section (PingPong's rejudge adds judges
        to a PingPong run in its folder; the run may then be run there again)."""
        def walk(commands: Mapping[str, FlowCommand | Group | str]) -> Iterable[FlowCommand]:
            for c in commands.values():
                if isinstance(c, Group):
                    yield from walk(c.commands)
                elif isinstance(c, FlowCommand):
                    yield c
        groups = [{c.flow or next(iter(flows)), *(set(flows) & {c.section})} for c in walk(self.commands)]
        return {flow}.union(*(g for g in groups if flow in g))

    def _flow_command(self, found: Any, command: FlowCommand) -> Callable[..., None]:
        from pydantic import BaseModel

        from rpbench.flows.kit.front.commands import leaderboard_lines, run_evaluation, settings_command
        from rpbench.flows.kit.front.registry import load_ref

        if command.flow is None:
            (flow,) = found.flows
        else:
            flow = command.flow
        model = load_ref(found.settings[flow])
        if isinstance(command.lines, str):
            lines: Lines = load_ref(f"{found.package}.{command.lines}")
        elif command.lines is not None:
            lines = command.lines
        else:
            headline = found.load_report().scoring.headline.name
            lines = lambda section: leaderboard_lines(section, headline)  # noqa: E731

        with_settings = len(inspect.signature(lines).parameters) > 1  # lines(section, settings): needs them too

        def run(settings: BaseModel) -> None:
            run_evaluation(settings, found.checks.get(flow), found.flows[flow], command.section or flow,
                           (lambda section: lines(section, settings)) if with_settings else lines)

        run.__doc__ = model.__doc__
        run.rpbench_mode = self.mode  # type: ignore[attr-defined]  # which mode's folders are its own
        run.rpbench_flows = self._sharing(flow, found.flows)  # type: ignore[attr-defined]
        return settings_command(model, run)


class RunCommand(Commands):
    """The commands of a mode whose one flow is its ``run`` command (``lines`` as a ``FlowCommand``'s), and
    ``more`` commands by name."""

    def __init__(self, mode: str, lines: Lines | str | None = None, more: Mapping[str, str] | None = None) -> None:
        super().__init__(mode, {"run": FlowCommand(None, lines), **(more or {})})
