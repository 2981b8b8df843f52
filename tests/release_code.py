"""Running a benchmark's own released code in a test, to compare what it builds and sends with what rpbench does.

The code is read from ``../shared/releases`` (pinned by commit and sha256; never copied into the repository) and
imported from there for the test's duration, with stand-ins only for the imports this machine cannot have (a
7B model's weights, vLLM, a vector store). rpbench itself never imports it: it reads the same files as text.
"""

from __future__ import annotations

import contextlib
import importlib
import random
import sys
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

RELEASES = Path(__file__).resolve().parents[1].parent / "shared" / "releases"


def release_folder(repository: str, commit: str) -> Path:
    """The release's folder, or the test skipped saying where it was looked for."""
    import pytest

    folder = RELEASES / f"{repository.replace('/', '__')}@{commit}"
    if not folder.is_dir():
        pytest.skip(f"the release's code is not here: {folder} (see ../shared/releases/README.md)")
    return folder


def stub(name: str, **attributes: Any) -> types.ModuleType:
    """A stand-in module (for an import the release makes that this machine cannot satisfy)."""
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    return module


def own_random() -> types.ModuleType:
    """A ``random`` module of the release's own, for ``imported``'s stubs: its functions drawn from a generator
    no other code uses. A release that seeds Python's shared generator (``random.seed(42)``) and draws from it
    while the test's process runs other threads (Prefect's services, an HTTP client's retries) would otherwise
    see their draws between its own, and send something a run on its own would not."""
    module = types.ModuleType("random")
    module.__dict__.update(vars(random))
    generator = random.Random()
    shared = random.seed.__self__  # type: ignore[attr-defined]  # the instance behind the module's functions
    module.__dict__.update({name: getattr(generator, name) for name, value in vars(random).items()
                            if getattr(value, "__self__", None) is shared})
    return module


class _Anything:
    """Whatever the release's stubbed import is asked for: callable, subscriptable, with any attribute."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> _Anything:
        return _Anything()

    def __getattr__(self, name: str) -> _Anything:
        return _Anything()

    def __getitem__(self, key: Any) -> _Anything:
        return _Anything()


def anything_module(name: str) -> types.ModuleType:
    """A stand-in module whose every attribute is an ``_Anything`` (a model loaded at import, say)."""
    module = types.ModuleType(name)
    module.__getattr__ = lambda attr: _Anything()  # type: ignore[method-assign]
    return module


@contextlib.contextmanager
def imported(folder: Path, names: list[str], stubs: Mapping[str, types.ModuleType] | None = None
             ) -> Iterator[list[types.ModuleType]]:
    """The release's modules ``names`` imported from ``folder`` (its own imports resolved there first), with
    ``stubs`` in place of modules it needs that are not installed; everything undone afterwards."""
    saved_path = list(sys.path)
    # Top-level names the release's files take (utils, agent, main, ...): another package's module of the same
    # name already imported would be found instead of the release's.
    own = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if p.is_dir()}
    replaced = {k: sys.modules.get(k) for k in {*(stubs or {}), *own}}
    for name in own:
        sys.modules.pop(name, None)
    before = set(sys.modules)
    sys.path.insert(0, str(folder))
    sys.modules.update(stubs or {})
    try:
        yield [importlib.import_module(n) for n in names]
    finally:
        sys.path[:] = saved_path
        for name in set(sys.modules) - before:  # the release's own modules (what it imports of others stays)
            where = getattr(sys.modules.get(name), "__file__", None) or ""
            if where.startswith(str(folder)):
                sys.modules.pop(name, None)
        for name, module in replaced.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
