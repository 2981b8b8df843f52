"""``rpbench releases``: the benchmarks' released code whose words rpbench sends, where it is read from and whether
every pinned file is there; ``rpbench releases fetch`` downloads them from each repository at its pinned commit."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from rpbench.tasks.core.errors import InputError, unknown_name

RELEASES_HELP = ("A folder in the releases layout (<owner>__<name>@<commit>/<path>). Default: RPBENCH_RELEASES, "
                 "else rpbench's own copy in its cache.")

app = typer.Typer(help="The benchmarks' released code, pinned by commit and sha256: the words their prompts are "
                       "read from at run time (rpbench copies none of them). Lists each release, where its files "
                       "are read from and whether all are there.", no_args_is_help=False,
                  invoke_without_command=True)


def _releases_by_benchmark() -> dict[str, list[Any]]:
    from rpbench.flows.kit.front.registry import modes

    return {name: mode.load_releases() for name, mode in modes().items()}


def _root(folder: str | None, must_exist: bool = True) -> Path:
    """The releases folder; a fetch makes it only once it has a file to write into it."""
    from rpbench.prompts.releases import releases_root

    if folder is None:
        return releases_root()
    path = Path(folder).expanduser()
    if (must_exist or path.exists()) and not path.is_dir():
        raise InputError(f"--releases: {path} is not a folder")
    return path


@app.callback()
def listing(ctx: typer.Context,
            releases: Annotated[str | None, typer.Option("--releases", help=RELEASES_HELP)] = None) -> None:
    """Each benchmark's release (repository@commit), where its files are read from, and whether every pinned file
    is there with its pinned sha256."""
    if ctx.invoked_subcommand is not None:
        return
    from rpbench.prompts.releases import states

    root = _root(releases)
    typer.echo(f"release files are read from {root}")
    for benchmark, found in _releases_by_benchmark().items():
        if not found:
            typer.echo(f"{benchmark}: no released code (its prompts are rpbench's own)")
            continue
        for release in found:
            held = states(release, root)
            missing = [p for p, s in held.items() if s == "missing"]
            differ = [p for p, s in held.items() if s == "differs"]
            state = ("all there" if not missing and not differ else ", ".join(
                x for x in (f"{len(missing)} missing" if missing else "", f"{len(differ)} not the pinned file"
                                                                           if differ else "") if x)
                + f": `rpbench releases fetch {benchmark}`")
            files = f"{len(held)} file" + ("s" if len(held) != 1 else "")
            typer.echo(f"{benchmark}: {release.name} ({release.about}): {files}, {state}")


@app.command("fetch")
def fetch(
    benchmarks: Annotated[list[str] | None, typer.Argument(help="Benchmarks whose releases to download (default: "
                                                                "every benchmark that has one).")] = None,
    releases: Annotated[str | None, typer.Option("--releases", help="Where to put them (made if missing). "
                                                                    + RELEASES_HELP)] = None,
) -> None:
    """Download each pinned release file from its repository at the pinned commit (GitHub) into the releases
    folder, checking its sha256 before it is written; files already there and pinned are kept. A file that
    cannot be downloaded, or comes with other bytes, is one line and exit 2."""
    from rpbench.prompts.releases import fetch as fetch_release

    known = _releases_by_benchmark()
    wanted = list(benchmarks or [name for name, found in known.items() if found])
    for name in wanted:
        if name not in known:
            raise unknown_name("benchmark", name, known)
        if not known[name]:
            raise InputError(f"{name}: the benchmark published no code, so there is no release to fetch (its "
                             "prompts are rpbench's own)")
    root = _root(releases, must_exist=False)
    for name in wanted:
        for release in known[name]:
            done = fetch_release(release, root)
            got = sum(v == "downloaded" for v in done.values())
            typer.echo(f"{name}: {release.name}: {got} downloaded, {len(done) - got} already there ({root})")
