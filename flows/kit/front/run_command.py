"""The command of a mode that is one evaluation flow, made from its spec: no commands module to write.

Light to import (a mode's spec names it, and every spec is read for `rpbench --help`): the command's pieces load
when the mode's commands are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer


class RunCommand:
    """A mode's ``commands`` when its one command runs its one evaluation flow: ``rpbench <mode> run``, the
    options from the flow's settings, the help from the settings' docstring, the mode's input check first, then
    the leaderboard (``leaderboard_lines``). A mode with more to say writes its own commands module."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def __call__(self, app: typer.Typer) -> None:
        from pydantic import BaseModel

        from rpbench.flows.kit.front.commands import leaderboard_lines, run_evaluation, settings_command
        from rpbench.flows.kit.front.registry import get_mode, load_ref

        found = get_mode(self.mode)
        (short, flow), = found.flows.items()
        model = load_ref(found.settings[short])
        headline = found.load_report().scoring.headline.name

        def run(settings: BaseModel) -> None:
            run_evaluation(settings, found.checks.get(short), flow, short,
                           lambda section: leaderboard_lines(section, headline))

        run.__doc__ = model.__doc__
        run.rpbench_mode = self.mode  # type: ignore[attr-defined]  # which mode's folders are its own
        app.command("run")(settings_command(model, run))
