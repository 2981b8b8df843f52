"""How a manifest records the files and folders of its run: relative to its own folder, so that a run folder
copied or moved together with what it read still finds it. Light on purpose (no Arrow): the settings of
every command import it, and ``rpbench --help`` must stay quick."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# A manifest records the files and folders its run's settings name relative to its own folder, so a run
# copied or moved together with what it read (the whole ``runs/`` tree, say) still finds them. Older
# manifests recorded them as given on the command line; this key tells the two apart.
PATHS_KEY, PATHS_RELATIVE = "paths", "settings' files and folders are relative to this manifest's folder"


def recorded_path(path: str | Path, root: str | Path) -> str:
    """``path`` (absolute, or relative to the working folder) as a manifest in ``root`` records it."""
    return Path(os.path.relpath(Path(path).absolute(), Path(root).absolute())).as_posix()


def recorded_location(manifest_path: Path, manifest: dict[str, Any], value: str) -> Path:
    """Where a path recorded in a manifest points now, read from the manifest's own folder."""
    path = Path(value)
    if path.is_absolute() or manifest.get(PATHS_KEY) != PATHS_RELATIVE:
        return path
    return Path(os.path.normpath(manifest_path.parent / path))
