"""``rpbench characters ...``: validate test-character files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rpbench.flows.cli.common import CacheOpt, ModelsOpt, opt, run_flow

app = typer.Typer(help="Test characters: check files of profiles with public and private attributes.",
                  no_args_is_help=True)


@app.command("check")
def check(
    files: Annotated[list[Path], typer.Argument(help="Character files (JSON or YAML; one character or a list).")],
) -> None:
    """Validate character files and print a summary; errors name the file, the character and the field."""
    from rpbench.tasks.modes.furina.characters.schema import load_characters

    for path in files:
        characters = load_characters(path)
        typer.echo(f"{path}: {len(characters)} character(s)")
        for c in characters:
            public = len(c.public())
            typer.echo(f"  {c.name} [{c.language}, {c.type}] {public} public / {len(c.attributes) - public} private"
                       f" attribute(s){f' - {c.source}' if c.source else ''}")


@app.command("synthesize")
def synthesize(
    out: Annotated[Path, typer.Option("--out", help="Characters file to write (YAML); its scenes go beside it: chars.yaml -> chars.scenes.json.")],
    n: Annotated[int, typer.Option("--n", help="Characters per group (they share a world and a scene).")] = 3,
    lang: Annotated[str, typer.Option("--lang", help="en or zh.")] = "en",
    groups: Annotated[int, typer.Option("--groups", help="Independent worlds to synthesize.")] = 1,
    pool: Annotated[Path | None, typer.Option("--pool", help="A pool whose characters count as known.")] = None,
    seed_role: Annotated[list[str] | None, typer.Option("--seed-role", help="Roles that propose themes (repeat for diversity).")] = None,
    max_refine: Annotated[int, typer.Option("--max-refine", help="Review-and-revise rounds per step.")] = 2,
    run_dir: Annotated[Path, typer.Option("--run-dir", help="Folder for call accounting and manifest.")] = Path("runs/characters"),
    models: ModelsOpt = None,
    cache: CacheOpt = None,
) -> None:
    """Synthesize original characters (role `synthesizer`): seeds, world, profiles, scene, dialogue, each reviewed."""
    from rpbench.tasks.core.errors import InputError

    if lang not in ("en", "zh"):
        raise InputError(f"--lang: unknown language '{lang}' (use en or zh)")
    from rpbench.flows.modes.furina.characters import synthesize_characters

    manifest = run_flow(synthesize_characters, out=str(out), n=n,
                        language=lang, groups=groups, pool=opt(pool), seed_roles=seed_role or None, max_refine=max_refine,
                        run_dir=str(run_dir), models=opt(models), cache=opt(cache))
    s = manifest.get("synthesis", {})
    typer.echo(f"{s.get('characters', 0)} character(s) in {out}; {s.get('scenes', 0)} scene(s) in {s.get('scenes_file')}")
    for failure in s.get("failed_groups", []):
        typer.echo(f"failed: {failure}", err=True)
