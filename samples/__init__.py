"""Data shipped with rpbench: sample books and starter characters.

Read through ``sample_path`` so the same code finds them in a checkout and in
an installed wheel (they are package data of ``rpbench.samples``).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def sample_path(*parts: str) -> Path:
    """The path of a shipped sample file, e.g. ``sample_path("books", "the_keepers_ledger.en.txt")``."""
    return Path(str(files(__name__).joinpath(*parts)))
