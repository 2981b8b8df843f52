"""Data shipped with rpbench: sample books and starter characters.

Read through ``sample_path`` so the same code finds them in a checkout and in
an installed wheel (they are package data of ``rpbench.samples``).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def sample_path(*parts: str) -> Path:
    """The path of a shipped sample file or folder, e.g. ``sample_path("books", "the_keepers_ledger.en.txt")``."""
    return source_of(Path(str(files(__name__).joinpath(*parts))))


def source_of(path: Path) -> Path:
    """Where a path of an editable install's link tree really is. That tree (``build/__editable__...``) holds
    links to the source files inside folders of its own, so a folder found through it would be shown to users
    under ``build/`` and would miss a file added to the sources since the install. A folder is mapped through any
    one link in it; outside such a tree (a checkout's own files, an installed wheel) the path is unchanged."""
    if path.is_symlink():
        return path.resolve()
    if path.is_dir():
        for link in sorted(path.rglob("*")):
            if link.is_symlink() and link.is_file():
                depth = len(link.relative_to(path).parts)
                return link.resolve().parents[depth - 1]
    return path
