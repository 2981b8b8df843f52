"""The command reference as Markdown, made from the command line itself (the documentation site includes it,
and a test holds it to every command and option there is)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# Typer carries its own copy of click: commands and options are read by what they hold, not by their class.
Command = Any


def all_commands() -> Iterator[tuple[str, Command]]:
    """(``rpbench a b``, command) for every command and group, each mode's loaded, in the order --help lists them."""
    from rpbench.flows.cli.main import make_cli
    from rpbench.flows.kit.front.registry import modes

    cli = make_cli()
    for mode in modes().values():
        if mode.commands is not None:
            cli._load(mode)

    def walk(cmd: Command, words: tuple[str, ...]) -> Iterator[tuple[str, Command]]:
        yield " ".join(words), cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            if not getattr(sub, "hidden", False) and not getattr(sub, "alias_of", None):
                yield from walk(sub, (*words, name))

    yield from walk(cli, ("rpbench",))


def _text(text: str) -> str:
    """Help text as Markdown shows it: outside `code`, < > and & as themselves (``RPBENCH_<ROLE>_<FIELD>`` is
    not an HTML tag to drop)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # even parts lie outside code spans
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _cell(text: Any) -> str:
    return _text(" ".join(str(text).split())).replace("|", "\\|")


def _option_rows(cmd: Command) -> list[str]:
    rows = []
    for p in cmd.params:
        if getattr(p, "hidden", False) or p.name == "help":
            continue
        if getattr(p, "param_type_name", "") == "option":
            flags = ", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
            default = "" if p.required or p.default in (None, False, (), []) or callable(p.default) else \
                f" Default: `{p.default}`."
            rows.append(f"| {flags} | {_cell(p.help or '')}{' (required)' if p.required else ''}{default} |")
        else:
            name = getattr(p, "metavar", None) or p.name or ""  # the name --help shows, not the parameter's
            help_text = getattr(p, "help", None)
            rows.append(f"| `{name.upper()}` | argument{': ' + _cell(help_text) if help_text else ''} |")
    return rows


def aliases() -> dict[str, str]:
    """Top-level names that stand for a mode's command (``rpbench build`` stands for ``rpbench furina build``)."""
    from rpbench.flows.cli.main import make_cli
    from rpbench.flows.kit.front.registry import modes

    cli = make_cli()
    for mode in modes().values():
        if mode.commands is not None:
            cli._load(mode)
    return {f"rpbench {name}": str(getattr(cmd, "alias_of", "")) for name, cmd in cli.commands.items()
            if getattr(cmd, "alias_of", None)}


def old_names() -> list[tuple[str, str, str]]:
    """Every old name that still works, one row each: (the old name, the name it stands for, where): the
    top-level commands that stand for a mode's, and the hidden flags that stand for an option (with the commands
    that take it)."""
    rows = [(f"`{old}`", f"`{new}`", "command") for old, new in sorted(aliases().items())]
    flags: dict[tuple[str, str], list[str]] = {}
    for words, cmd in all_commands():
        params = {p.name: p for p in getattr(cmd, "params", [])}
        for p in params.values():
            if getattr(p, "hidden", False) and "__old" in (p.name or ""):
                new = params.get(p.name.split("__old")[0])
                flag = new.opts[0] if new is not None and getattr(new, "opts", None) else p.name
                for o in p.opts:
                    flags.setdefault((o, flag), []).append(words.removeprefix("rpbench "))
    rows += [(f"`{o}`", f"`{n}`", "option of " + ", ".join(f"`{c}`" for c in cmds))
             for (o, n), cmds in sorted(flags.items())]
    return rows


def reference_markdown() -> str:
    out = []
    if old := old_names():
        out += ["Each command is listed once, under its benchmark. These older names still work, each with a "
                "note that it will go in the next release:\n", "| old name | stands for | kind |", "|---|---|---|",
                *(f"| {a} | {b} | {k} |" for a, b, k in old), ""]
    for words, cmd in all_commands():
        depth = min(len(words.split()), 4)
        out.append(f"{'#' * (depth + 1)} `{words}`\n")
        if cmd.help:
            out.append(_text(cmd.help.strip().replace("\b\n", "")) + "\n")
        rows = _option_rows(cmd)
        if rows:
            out += ["| option | what it does |", "|---|---|", *rows, ""]
    return "\n".join(out)
