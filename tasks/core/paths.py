"""Where rpbench keeps files it derives once and reuses across runs (tokenizers, re-encoded weights)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """RPBENCH_CACHE_DIR, or ``~/.cache/rpbench``."""
    return Path(os.environ.get("RPBENCH_CACHE_DIR", Path.home() / ".cache" / "rpbench"))
