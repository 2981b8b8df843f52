"""A stage's cache key covers its own mode's code and the shared code it uses, and nothing else: editing one
mode re-runs that mode's stages only (checked on a copy of the package, edited)."""

from __future__ import annotations

import shutil
from pathlib import Path

from rpbench.flows.kit.front.registry import modes
from rpbench.flows.kit.running.code_digest import code_digest, dependencies, package_root


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "rpbench"
    for part in ("tasks", "storage", "prompts", "flows"):
        shutil.copytree(package_root() / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _stage_modules() -> dict[str, set[str]]:
    """Each mode's modules that define its flows (and with them its stages)."""
    return {name: {ref.partition(":")[0] for ref in mode.flows.values()} for name, mode in modes().items()}


def _digests(root: Path) -> dict[str, str]:
    return {module: code_digest(module, root) for mods in _stage_modules().values() for module in mods}


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# an edit\n")
    code_digest.cache_clear()  # a process remembers digests: its code does not change under it, the copy does


def test_editing_one_mode_changes_only_that_modes_stage_keys(tmp_path):
    root = _copy(tmp_path)
    before = _digests(root)
    _edit(root / "tasks" / "modes" / "roleinteract" / "answering.py")
    after = _digests(root)
    changed = {m for m in before if before[m] != after[m]}
    assert changed == _stage_modules()["roleinteract"]
    assert len(before) > len(changed)  # the other four modes' stages keep their keys


def test_editing_shared_code_a_stage_uses_changes_its_key(tmp_path):
    root = _copy(tmp_path)
    before = _digests(root)
    _edit(root / "tasks" / "stats" / "intervals.py")  # bootstrap intervals: every mode's report uses them
    after = _digests(root)
    assert all(before[m] != after[m] for mods in _stage_modules().values() for m in mods if
               root / "tasks" / "stats" / "intervals.py" in dependencies(m, root))
    # Every mode's report stage is keyed on its scoring hook's code (the kit's report stage adds it), and
    # every hook scores with intervals; a stage that makes answers is not keyed on them.
    hooks = {mode.score.partition(":")[0] for mode in modes().values() if isinstance(mode.score, str)}
    code_digest.cache_clear()
    edited = {m: code_digest(m, root) for m in hooks}
    (root / "tasks" / "stats" / "intervals.py").write_text(
        (root / "tasks" / "stats" / "intervals.py").read_text().removesuffix("\n# an edit\n"))
    code_digest.cache_clear()
    assert len(hooks) >= 7 and all(code_digest(m, root) != edited[m] for m in hooks)


def test_a_stage_depends_on_its_modes_code_and_shared_code_but_no_other_modes():
    root = package_root()
    files = {p.relative_to(root).as_posix() for p in dependencies("rpbench.flows.modes.roleinteract.flows", root)}
    assert "tasks/modes/roleinteract/answering.py" in files and "storage/schemas.py" in files
    assert "tasks/choices/letters.py" in files  # the kit's letter reader, which RoleInteract reads replies with
    assert not any(f.startswith("tasks/modes/") and "/roleinteract/" not in f and f != "tasks/modes/__init__.py"
                   for f in files)
    assert not any(f.startswith("flows/") for f in files)  # the Prefect shell is not the work
