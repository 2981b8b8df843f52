"""The run folder layout and its manifest.

``runs/<run-name>/`` holds the tables of one run and ``manifest.json``: the
config (which by construction holds no secrets, and is scrubbed again
anyway), package versions, prompt template hashes, model ids, row counts,
token and cost totals, and timings.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from rpbench.storage.recorded_paths import PATHS_KEY, PATHS_RELATIVE
from rpbench.storage.schemas import TableSpec
from rpbench.storage.tables import atomic_write_bytes
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.secrets import scrub

MANIFEST = "manifest.json"
TRACKED_PACKAGES = ("rpbench", "prefect", "litellm", "transformers", "torch", "pyarrow", "polars", "peft", "xgrammar")


def manifest_of(folder: Path) -> dict[str, Any] | None:
    """A run folder's manifest; None when it has none. One that is not a JSON object is an input error naming
    it: rpbench writes it whole or not at all (atomically), so such a file was damaged or written by hand, and
    a run must neither trust it nor fail on it after its work is done."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}); not a manifest rpbench wrote") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg}, line {exc.lineno}); not a manifest rpbench wrote") from None
    if not isinstance(manifest, dict):
        raise InputError(f"{path}: not a JSON object; not a manifest rpbench wrote")
    return manifest


def _nan_as_null(obj: Any) -> Any:
    """An undefined number (an interval over one item, the score of a model with none) as JSON's null: Python
    would write NaN, which JSON does not have and strict readers (jq, a browser) refuse. The Parquet tables
    keep the nan."""
    if isinstance(obj, float) and obj != obj:
        return None
    if isinstance(obj, dict):
        return {k: _nan_as_null(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_nan_as_null(v) for v in obj]
    return obj


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


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
        return manifest_of(self.root) or {}

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
        text = json.dumps(_nan_as_null(scrub(manifest)), indent=2, ensure_ascii=False, default=str)
        atomic_write_bytes(self.manifest_path, text.encode("utf-8"))
        return manifest
