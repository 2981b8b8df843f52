"""``rpbench characters ...``: validate test-character files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Test characters: check files of profiles with public and private attributes.",
                  no_args_is_help=True)


@app.command("check")
def check(
    files: Annotated[list[Path], typer.Argument(help="Character files (JSON or YAML; one character or a list).")],
) -> None:
    """Validate character files and print a summary; errors name the file, the character and the field."""
    from tasks.characters.schema import load_characters

    for path in files:
        characters = load_characters(path)
        typer.echo(f"{path}: {len(characters)} character(s)")
        for c in characters:
            public = len(c.public())
            typer.echo(f"  {c.name} [{c.language}, {c.type}] {public} public / {len(c.attributes) - public} private"
                       f" attribute(s){f' - {c.source}' if c.source else ''}")
