"""A mode's commands as its spec declares them: each command that runs one of its flows is a line, not a
function. Declarations only, light to import (every spec is read for `rpbench --help`): the commands are made
from them above the kit's running floor (``flows.kit.commands.mode_commands``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

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

    def sharing(self, flow: str, flows: Mapping[str, str]) -> set[str]:
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


class RunCommand(Commands):
    """The commands of a mode whose one flow is its ``run`` command (``lines`` as a ``FlowCommand``'s), and
    ``more`` commands by name."""

    def __init__(self, mode: str, lines: Lines | str | None = None, more: Mapping[str, str] | None = None) -> None:
        super().__init__(mode, {"run": FlowCommand(None, lines), **(more or {})})
