"""The run folder layout and its manifest.

``runs/<run-name>/`` holds the tables of one run and ``manifest.json``: the
config (which by construction holds no secrets, and is scrubbed again
anyway), package versions, prompt template hashes, model ids, row counts,
token and cost totals, and timings.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from rpbench.storage.schemas import TableSpec
from rpbench.storage.tables import atomic_write_bytes
from rpbench.tasks.core.secrets import scrub

MANIFEST = "manifest.json"
# A manifest records the files and folders its run's settings name relative to its own folder, so a run
# copied or moved together with what it read (the whole ``runs/`` tree, say) still finds them. Older
# manifests recorded them as given on the command line; this key tells the two apart.
PATHS_KEY, PATHS_RELATIVE = "paths", "settings' files and folders are relative to this manifest's folder"
TRACKED_PACKAGES = ("rpbench", "prefect", "litellm", "transformers", "torch", "pyarrow", "polars", "peft", "xgrammar")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def recorded_path(path: str | Path, root: str | Path) -> str:
    """``path`` (absolute, or relative to the working folder) as a manifest in ``root`` records it."""
    return Path(os.path.relpath(Path(path).absolute(), Path(root).absolute())).as_posix()


def recorded_location(manifest_path: Path, manifest: dict[str, Any], value: str) -> Path:
    """Where a path recorded in a manifest points now, read from the manifest's own folder."""
    path = Path(value)
    if path.is_absolute() or manifest.get(PATHS_KEY) != PATHS_RELATIVE:
        return path
    return Path(os.path.normpath(manifest_path.parent / path))


@dataclass
class RunDir:
    """A run's folder: table paths and the manifest that describes them."""

    root: Path
    started: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.root.mkdir(parents=True, exist_ok=True)

    def table(self, spec: TableSpec) -> Path:
        return self.root / spec.filename

    @property
    def manifest_path(self) -> Path:
        return self.root / MANIFEST

    def read_manifest(self) -> dict[str, Any]:
        if not self.manifest_path.is_file():
            return {}
        return json.loads(self.manifest_path.read_text(encoding="utf-8"))

    def row_counts(self) -> dict[str, int]:
        return {p.stem: pq.ParquetFile(p).metadata.num_rows for p in sorted(self.root.glob("*.parquet"))}

    def write_manifest(self, **sections: Any) -> dict[str, Any]:
        """Merge ``sections`` into the manifest and rewrite it atomically."""
        manifest = self.read_manifest()
        manifest.update(sections)
        manifest[PATHS_KEY] = PATHS_RELATIVE
        manifest["packages"] = package_versions()
        manifest["row_counts"] = self.row_counts()
        timings = manifest.setdefault("timings", {})
        timings["wall_s"] = round(time.time() - self.started, 3)
        text = json.dumps(scrub(manifest), indent=2, ensure_ascii=False, default=str)
        atomic_write_bytes(self.manifest_path, text.encode("utf-8"))
        return manifest
