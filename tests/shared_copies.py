"""What ``../shared`` beside the checkout holds for the tests and the benchmarks (CI has it; the repository may
not redistribute it): the released data and the releases' own code, whose prompts' words the runs read."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def use_shared_releases() -> None:
    """Runs read the releases' code from ``../shared/releases`` when it is there, as a user's runs read `rpbench
    releases fetch`'s copy (a folder already named by RPBENCH_RELEASES stays); child processes inherit it."""
    if (SHARED / "releases").is_dir():
        os.environ.setdefault("RPBENCH_RELEASES", str(SHARED / "releases"))
