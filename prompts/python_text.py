"""Words read out of a release's Python files as text, with ``ast``: never imported, never executed.

A release states its prompts as string constants (``PROMPT_EN = \"\"\"...\"\"\"``), as literal dictionaries, or as
f-strings inside the function that builds them. These helpers find such a value by where it stands in the file
(a module-level name, a function and the name it is assigned to) and give it back as data: a constant as its
value, an f-string as a ``Template`` whose holes are filled with values rpbench supplies by name. What the
release's code computes around those words (which branch, which fields) is rpbench's own code, tested against
the release's requests.
"""

from __future__ import annotations

import ast
import functools
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


class ReleaseLayoutError(ValueError):
    """A release file does not hold what rpbench reads from it where it expects it (another commit's file)."""


# CPython 3.11's parser is not safe to run in two threads at once ("AST constructor recursion depth mismatch",
# python/cpython#106905): a stage's concurrent scenes each read a release file the first time together.
PARSING = threading.Lock()
# The lock keeps rpbench's parses apart, not a library's (``ast.literal_eval`` parses too) on another thread:
# the same error, now and then, in the full suite. The parse is pure, so it is made again.
_RACED = "AST constructor recursion depth mismatch"
_ATTEMPTS = 5


def parse_python(source: str | bytes) -> ast.Module:
    """``ast.parse``, one thread at a time (every parse in rpbench goes through here)."""
    for attempt in range(_ATTEMPTS):
        try:
            with PARSING:
                return ast.parse(source)
        except SystemError as exc:
            if _RACED not in str(exc) or attempt == _ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


@functools.lru_cache(maxsize=64)
def parsed(source: str) -> ast.Module:
    return parse_python(source)


@functools.lru_cache(maxsize=64)
def module_constants(source: str) -> dict[str, Any]:
    """Every module-level ``NAME = <literal>`` (strings, numbers, lists and dicts of them) by name; the last
    assignment of a name wins, as it would."""
    out: dict[str, Any] = {}
    for node in parsed(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue  # not a literal: not words
    return out


def constant(source: str, name: str, where: str) -> Any:
    """The module-level literal ``name``; ``where`` names the file in the error."""
    found = module_constants(source)
    if name not in found:
        raise ReleaseLayoutError(f"{where}: no module-level literal {name}")
    return found[name]


def function(source: str, name: str, where: str) -> ast.FunctionDef:
    """The top-level function ``name``."""
    for node in parsed(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise ReleaseLayoutError(f"{where}: no function {name}")


def _walk_in_order(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node`` in source order (``ast.walk`` goes breadth first)."""
    for child in ast.iter_child_nodes(node):
        yield child
        yield from _walk_in_order(child)


def assignments(fn: ast.AST, target: str) -> list[ast.expr]:
    """The values assigned to ``target`` (a name, or an attribute as written: ``self.system_prompt``; ``=`` and
    ``+=``) inside ``fn``, in source order."""
    def names(node: ast.AST) -> bool:
        return isinstance(node, ast.Name | ast.Attribute) and ast.unparse(node) == target

    out: list[ast.expr] = []
    for node in _walk_in_order(fn):
        assigned = ((isinstance(node, ast.Assign) and any(names(t) for t in node.targets))
                    or (isinstance(node, ast.AugAssign) and names(node.target)))
        if assigned:
            out.append(node.value)  # type: ignore[attr-defined]
    return out


def method(source: str, cls: str, name: str, where: str) -> ast.FunctionDef:
    """Method ``name`` of the top-level class ``cls``."""
    for node in parsed(source).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return item
    raise ReleaseLayoutError(f"{where}: no method {cls}.{name}")


def constant_value(node: ast.expr, where: str) -> Any:
    """A literal, or text built of literals with ``+`` and ``*`` (``'*' * 30 + '\\n\\n'``), as its value."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = constant_value(node.left, where), constant_value(node.right, where)
        if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
            return left + right
        if isinstance(node.op, ast.Mult) and isinstance(left, str) and isinstance(right, int):
            return left * right
        raise ReleaseLayoutError(f"{where}: `{ast.unparse(node)[:60]}` is not text made of literals")
    if isinstance(node, ast.List | ast.Tuple):
        return [constant_value(e, where) for e in node.elts]
    return literal(node, where)


def calls(fn: ast.AST, name: str) -> list[ast.Call]:
    """The calls of ``name`` (``f(...)`` or ``x.f(...)``) inside ``fn``, in source order."""
    found = []
    for node in _walk_in_order(fn):
        if isinstance(node, ast.Call):
            callee = node.func
            called = callee.id if isinstance(callee, ast.Name) else callee.attr if isinstance(
                callee, ast.Attribute) else None
            if called == name:
                found.append(node)
    return found


def branch(fn: ast.AST, test: str) -> ast.If:
    """The ``if`` whose test reads ``test`` (as ``ast.unparse`` writes it) inside ``fn``."""
    for node in _walk_in_order(fn):
        if isinstance(node, ast.If) and ast.unparse(node.test) == test:
            return node
    raise ReleaseLayoutError(f"no `if {test}:`")


def dict_entry(node: ast.expr, key: str, where: str) -> ast.expr:
    """The value of ``key`` in a dict display (``{"key": ...}``), as a node."""
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values, strict=True):
            if isinstance(k, ast.Constant) and k.value == key:
                return v
    raise ReleaseLayoutError(f"{where}: no {key!r} in `{ast.unparse(node)[:60]}`")


def literal(node: ast.expr, where: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ReleaseLayoutError(f"{where}: `{ast.unparse(node)[:60]}` is not a literal") from None


@dataclass(frozen=True)
class Template:
    """An f-string (or a plain string) of a release: literal text and holes, each hole the source of the
    expression the release puts there (``character``, ``random.choice(model_roles)``). Filled with values by
    that source text; a hole with no value is an error, never an empty string."""

    parts: tuple[str | tuple[str], ...]  # text, or (expression source,)

    @property
    def holes(self) -> list[str]:
        return [p[0] for p in self.parts if isinstance(p, tuple)]

    def fill(self, values: Mapping[str, Any]) -> str:
        out = []
        for part in self.parts:
            if isinstance(part, tuple):
                if part[0] not in values:
                    raise KeyError(f"no value for the release's {{{part[0]}}}")
                out.append(str(values[part[0]]))
            else:
                out.append(part)
        return "".join(out)

    def literal_text(self) -> list[str]:
        """Its literal runs (what a request must hold word for word)."""
        return [p for p in self.parts if isinstance(p, str)]


def template(node: ast.expr, where: str) -> Template:
    """A string constant or an f-string of a release as a ``Template``; anything else is a layout error."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return Template((node.value,))
    if not isinstance(node, ast.JoinedStr):
        raise ReleaseLayoutError(f"{where}: `{ast.unparse(node)[:60]}` is not a string")
    parts: list[str | tuple[str]] = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        elif isinstance(value, ast.FormattedValue):
            if value.conversion != -1 or value.format_spec is not None:
                raise ReleaseLayoutError(f"{where}: a formatted hole rpbench does not read "
                                         f"({ast.unparse(value)[:60]})")
            parts.append((ast.unparse(value.value),))
        else:  # pragma: no cover - JoinedStr holds only these
            raise ReleaseLayoutError(f"{where}: unexpected f-string part")
    return Template(tuple(parts))


def imported_names(source: str) -> dict[str, str]:
    """``from <module> import <name>`` at module level: name -> module (as written)."""
    out = {}
    for node in parsed(source).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                out[alias.asname or alias.name] = node.module
    return out


def dict_of_names(source: str, name: str, where: str) -> dict[str, dict[str, str | None]]:
    """A module-level ``name = {key: {field: NAME or "", ...}, ...}`` (a table of which constant serves which
    key), each NAME as the name written there ("" as None)."""
    for node in parsed(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name and isinstance(node.value, ast.Dict)):
            out: dict[str, dict[str, str | None]] = {}
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if not isinstance(key, ast.Constant) or not isinstance(value, ast.Dict):
                    raise ReleaseLayoutError(f"{where}: {name} is not a table of tables")
                row: dict[str, str | None] = {}
                for field, cell in zip(value.keys, value.values, strict=True):
                    if not isinstance(field, ast.Constant):
                        raise ReleaseLayoutError(f"{where}: {name}[{key.value!r}] has a computed key")
                    row[str(field.value)] = (cell.id if isinstance(cell, ast.Name)
                                             else None if isinstance(cell, ast.Constant) and cell.value == ""
                                             else ast.unparse(cell))
                out[str(key.value)] = row
            return out
    raise ReleaseLayoutError(f"{where}: no module-level table {name}")
