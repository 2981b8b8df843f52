"""The code a stage's output depends on: its own module's imports of the work (``rpbench.tasks``, storage,
prompt rendering), followed through every module they import in turn.

A stage's cache key hashes these files, so editing one mode's modules re-runs that mode's stages and no
other's, and editing a shared module (statistics, the gateway) re-runs every stage that uses it. The
Prefect shell (``rpbench.flows``) is not followed: a stage's own source is hashed on its own, and the kit
around it decides nothing in its tables. Imports inside functions count as much as those at the top.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

from rpbench.prompts.python_text import parse_python

# Where each top-level part of the package lives below the installed ``rpbench`` folder (or a checkout).
PARTS = {"tasks": "tasks", "storage": "storage", "prompts": "prompts", "flows": "flows"}
FOLLOWED = ("rpbench.tasks", "rpbench.storage", "rpbench.prompts")


def package_root() -> Path:
    """The folder holding ``tasks``, ``storage``, ``prompts`` and ``flows`` as this process imports them."""
    import rpbench.tasks

    return Path(next(iter(rpbench.tasks.__path__))).parent


def module_file(name: str, root: Path) -> Path | None:
    """The source file of module ``rpbench.<part>...`` below ``root``; of another package's module (a mode
    registered from outside rpbench), where Python finds it; None when there is none."""
    parts = name.split(".")
    if parts[0] != "rpbench":
        return _found_elsewhere(name)
    if len(parts) < 2 or parts[1] not in PARTS:
        return None
    base = root / PARTS[parts[1]] / Path(*parts[2:]) if len(parts) > 2 else root / PARTS[parts[1]]
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _found_elsewhere(name: str) -> Path | None:
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec is not None else None
    return Path(origin) if origin and origin.endswith(".py") else None


@functools.cache  # each file parsed once per process: every stage's walk crosses the shared modules
def _imported(path: Path, root: Path, own: str) -> frozenset[str]:
    """The ``rpbench`` modules a file imports (a ``from package import name`` counts the submodule if it is one)."""
    found: set[str] = set()
    for node in ast.walk(parse_python(path.read_bytes())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith(("rpbench.", own))}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(("rpbench", own)):
            found.add(node.module)
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if module_file(sub, root) is not None:
                    found.add(sub)
    # A module's parent packages run when it is imported: they count too.
    for name in list(found):
        parts = name.split(".")
        found |= {".".join(parts[:k]) for k in range(2, len(parts))}
    return frozenset(found)


@functools.cache
def dependencies(module: str, root: Path) -> tuple[Path, ...]:
    """The work's source files ``module`` depends on, sorted (``module`` itself only if it is work). A module
    of another package (a plug-in mode) counts with every module of its own package it imports."""
    start = module_file(module, root)
    if start is None:
        return ()
    own = module.split(".")[0] + "." if not module.startswith("rpbench.") else "rpbench.tasks."
    followed = (*FOLLOWED, own)
    seen: set[Path] = set()
    todo = [start]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imported(path, root, own):
            if name.startswith(followed):
                found = module_file(name, root)
                if found is not None and found not in seen:
                    todo.append(found)
    if module.startswith("rpbench.") and not module.startswith(FOLLOWED):
        seen.discard(start)  # rpbench's own Prefect shell: the stage's source is hashed on its own
    return tuple(sorted(seen))


@functools.cache
def code_digest(module: str, root: Path | None = None) -> str:
    """SHA-256 over the files ``module`` depends on (names relative to the root, and contents)."""
    root = root or package_root()
    h = hashlib.sha256()
    for path in dependencies(module, root):
        h.update((path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name).encode())
        h.update(path.read_bytes())
    return h.hexdigest()
