"""The top-level command group, with the modes' commands loaded only when one of them is used.

`rpbench --help` lists a mode's commands from its spec (name and one line); running one, or asking for its
help, imports the mode's commands module then. A command name two modes claim is an error, not a shadow.

Every mode is a group named after it (`rpbench pingpong run`, `rpbench furina build`). FURINA's commands also
stay at the top level (`rpbench build`), where they were before the other modes came, as aliases for one
release: their help says so.
"""

from __future__ import annotations

import copy
import inspect
import re
from typing import Any

import click
import typer
from typer.core import TyperCommand, TyperGroup

from rpbench.flows.kit.front.registry import BenchmarkMode, modes


class _Placeholder(TyperCommand):
    """A mode's command as `rpbench --help` lists it: its name and one line, with nothing of the mode loaded."""

    def __init__(self, name: str, help: str, mode: BenchmarkMode) -> None:
        super().__init__(name=name, help=help)
        self.mode = mode


def _alias_note(mode: BenchmarkMode, name: str) -> str:
    return f"(Also `rpbench {mode.name} {name}`; this top-level name goes in the next release.)"


def _name_roles(command: Any, mode: BenchmarkMode) -> None:
    """Say in a mode's --models-file help which roles that mode's models file binds."""
    for sub in getattr(command, "commands", {}).values():
        _name_roles(sub, mode)
    for param in getattr(command, "params", []):
        if param.name == "models_file" and param.help and "Roles of " not in param.help:
            param.help += f" Roles of {mode.name}: {', '.join(mode.roles)}."


def tidy_help(command: Any) -> None:
    """What typer's --help gets wrong, put right for a command and its subcommands: each paragraph of the help
    as one line for --help to wrap (typer keeps a docstring's line breaks, which cut the listing's lines
    mid-sentence), no value shown for a switch (a user reading "--judge-released <bool>" types "true"), and one
    value shown for an option given once per value."""
    for sub in getattr(command, "commands", {}).values():
        tidy_help(sub)
    if command.help:
        command.help = "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(command.help).split("\n\n"))
    ctx = click.Context(command)
    for param in [*command.params, command.get_help_option(ctx)]:  # --help is made apart from the params
        if param is None:
            continue
        if getattr(param, "is_flag", False):
            param.metavar = ""
        elif getattr(param, "multiple", False) and param.metavar is None and hasattr(param, "display_type"):
            # A repeated option takes one value each time: "<str>", not typer's "<list[str]>".
            param.metavar = re.sub(r"^<list\[(.*)\]>$", r"<\1>", param.display_type(ctx))


class ModesGroup(TyperGroup):
    """The top-level command group: a mode's commands load when one of them is run (or asked for help)."""

    def add_modes(self) -> None:
        for mode in modes().values():
            if mode.commands is None:
                continue
            self._claim(mode.name, _Placeholder(mode.name, mode.description, mode))
            for name, line in mode.top_commands.items():
                self._claim(name, _Placeholder(name, f"{line} {_alias_note(mode, name)}", mode))

    def _claim(self, name: str, command: TyperCommand) -> None:
        held = self.commands.get(name)
        if held is not None:
            owner = held.mode.name if isinstance(held, _Placeholder) else "rpbench"
            raise ValueError(f"command '{name}' is claimed twice (by {owner} and by the mode it is added for)")
        self.commands[name] = command

    def _load(self, mode: BenchmarkMode) -> None:
        from rpbench.flows.kit.commands.mode_commands import add_mode_commands  # a mode's, when it is asked for

        sub = typer.Typer(help=mode.description, no_args_is_help=True)
        add_mode_commands(sub, mode)
        group = typer.main.get_group(sub)
        group.name = mode.name
        _name_roles(group, mode)
        tidy_help(group)
        loaded: dict[str, Any] = {mode.name: group}
        if mode.top_commands:
            if set(group.commands) != set(mode.top_commands):
                raise ValueError(f"mode {mode.name} adds commands {sorted(group.commands)} but its spec names "
                                 f"{sorted(mode.top_commands)}")
            for name, command in group.commands.items():
                alias = copy.copy(command)  # the same command, its help noting the name it has in the group
                alias.help = f"{command.help or ''}\n\n{_alias_note(mode, name)}"
                alias.short_help = f"{mode.top_commands[name]} {_alias_note(mode, name)}"
                alias.alias_of = f"rpbench {mode.name} {name}"  # type: ignore[attr-defined]  # listed once, there
                loaded[name] = alias
        self.commands.update(loaded)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        held = self.commands.get(args[0]) if args else None
        if isinstance(held, _Placeholder):
            self._load(held.mode)
        return super().resolve_command(ctx, args)
