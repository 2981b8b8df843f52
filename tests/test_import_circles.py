"""No module of rpbench imports one that imports it back: every import is followed, at a module's top, inside a
function or under ``if TYPE_CHECKING:``, so a circle cannot hide in a function (issue 80 found one of 15 kit
modules, 21 of its 46 imports inside functions). import-linter holds the layers; this holds what it does not,
the order inside a layer."""

from __future__ import annotations

import ast
from pathlib import Path

from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("tasks", "storage", "prompts", "flows", "deployments", "samples")


def modules() -> dict[str, Path]:
    found = {}
    for part in PARTS:
        for path in (ROOT / part).rglob("*.py"):
            name = ".".join(("rpbench", *path.relative_to(ROOT).with_suffix("").parts))
            found[name.removesuffix(".__init__")] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The rpbench modules ``name`` imports anywhere in its file (``from a import b``: ``a.b`` if it is one)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1], *([base] if base else [])])
            named = [base, *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        for target in named:
            while target and target not in known:  # a name inside a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def circles(known: dict[str, Path]) -> list[list[str]]:
    names = sorted(known)
    index = {n: i for i, n in enumerate(names)}
    edges = [(index[m], index[t]) for m in names for t in imports(m, known[m], known)]
    graph = csr_matrix(([1] * len(edges), ([a for a, _ in edges], [b for _, b in edges])), shape=(len(names),) * 2)
    _count, labels = connected_components(graph, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for n, label in zip(names, labels, strict=True):
        groups.setdefault(int(label), []).append(n)
    return [g for g in groups.values() if len(g) > 1]


def test_no_module_imports_one_that_imports_it_back():
    known = modules()
    assert len(known) > 300  # the walk found the package
    assert circles(known) == []


def test_the_walk_finds_a_circle_through_a_function_level_import(tmp_path):
    """The check itself: two modules, one importing the other inside a function, are one circle."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import rpbench.x.b\n", encoding="utf-8")
    b.write_text("def f():\n    from rpbench.x.a import g\n", encoding="utf-8")
    assert circles({"rpbench.x.a": a, "rpbench.x.b": b}) == [["rpbench.x.a", "rpbench.x.b"]]
    b.write_text("def f():\n    pass\n", encoding="utf-8")
    assert circles({"rpbench.x.a": a, "rpbench.x.b": b}) == []


def test_a_role_bound_to_a_model_is_read_in_one_place():
    """Issue 80: "like@model" strings were split with partition("@") in four places; now one function reads
    them (tasks/llm/config.py: split_at), and the parsed binding says what each part is."""
    from rpbench.tasks.llm.config import RoleBinding, endpoint_parts, role_shown

    readers = [str(p.relative_to(ROOT)) for p in modules().values()
               if any(s in p.read_text(encoding="utf-8") for s in ('partition("@")', "split(\"@\")"))]
    assert readers == ["tasks/llm/config.py"]
    assert RoleBinding.parse("judge") == RoleBinding("judge")
    assert RoleBinding.parse("player@openai/gpt-4o") == RoleBinding("player", model="openai/gpt-4o")
    assert RoleBinding.parse("player@role:gpt4o") == RoleBinding("player", bound="gpt4o")
    assert role_shown("player@role:gpt4o") == "gpt4o" and role_shown("player@openai/x") == "player"
    assert endpoint_parts("openai/x@http://h:1/v1") == ("openai/x", "http://h:1/v1")
