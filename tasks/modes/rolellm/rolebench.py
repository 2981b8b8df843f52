"""Reading and writing RoleBench's rows as published: JSON Lines of ``role``, ``question``, ``generated`` (a list
of references) and, in role-specific files, ``type`` (a string in some files, a list in others); some files
escape non-ASCII characters as ``\\uXXXX`` and others do not (JSON reads both).

A path is one such file, or a folder in the released layout, read as it is:
``rolebench-eng/instruction-generalization/{general,role_specific}/{train,test,rolegpt_baseline}.jsonl``,
``rolebench-eng/role-generalization/...`` and ``rolebench-zh/{general,role_specific}/...``. A row's split is
``eng-instruction-generalization``, ``eng-role-generalization`` or ``zh`` (elsewhere, the folder the file is in),
its kind ``general`` or ``role_specific`` from the folder (elsewhere: role-specific rows carry a ``type``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from rpbench.storage.tables import atomic_write_bytes
from rpbench.storage.user_files import read_user_text
from rpbench.tasks.core.errors import InputError, close_match
from rpbench.tasks.modes.rolellm.records import BenchRow, Kind
from rpbench.tasks.stats.similarity import has_cjk

MAX_FILE_BYTES = 512 * 2**20
ROW_FIELDS = {"role", "question", "generated", "type"}


def _place(path: Path) -> tuple[str, Kind | None]:
    """A file's split and kind, from where it sits in the released layout."""
    parts = path.resolve().parts
    kind: Kind | None = path.parent.name if path.parent.name in ("general", "role_specific") else None  # type: ignore[assignment]
    if "rolebench-zh" in parts:
        return "zh", kind
    if "rolebench-eng" in parts:
        below = parts[parts.index("rolebench-eng") + 1]
        return (f"eng-{below}" if below not in ("general", "role_specific") and below != path.name else "eng"), kind
    return (path.parent.parent.name if kind else path.stem), kind


def _row(line: str, path: Path, n: int, split: str, kind: Kind | None, part: str) -> BenchRow:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {n}: not JSON ({exc.msg})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{path}: line {n}: expected an object with role, question, generated")
    unknown = sorted(set(raw) - ROW_FIELDS)
    if unknown:
        raise InputError(f"{path}: line {n}: unknown field '{unknown[0]}' (a RoleBench row has role, question, "
                         "generated and optionally type)")
    for field in ("role", "question", "generated"):
        if field not in raw:
            raise InputError(f"{path}: line {n}: field '{field}': missing")
    if not isinstance(raw["role"], str) or not raw["role"].strip():
        raise InputError(f"{path}: line {n}: field 'role': expected a role name")
    if not isinstance(raw["question"], str) or not raw["question"].strip():
        raise InputError(f"{path}: line {n}: field 'question': expected the question as text")
    generated = raw["generated"]
    generated = [generated] if isinstance(generated, str) else generated
    if not isinstance(generated, list) or not generated or not all(isinstance(g, str) for g in generated):
        raise InputError(f"{path}: line {n}: field 'generated': expected a non-empty list of reference answers")
    types = raw.get("type")
    types = [] if types is None else [types] if isinstance(types, str) else types
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise InputError(f"{path}: line {n}: field 'type': expected text or a list of text")
    row_kind = kind or ("role_specific" if types else None)
    if row_kind is None:
        raise InputError(f"{path}: line {n}: cannot tell whether this is a general or a role-specific question "
                         "(keep the file under general/ or role_specific/, or give role-specific rows a type)")
    language: Literal["en", "zh"] = "zh" if split == "zh" or has_cjk(raw["question"] + generated[0]) else "en"
    return BenchRow(row_id=f"{split}/{row_kind}/{part}:{n}", split=split, kind=row_kind, part=part,
                    role=raw["role"].strip(), question=raw["question"], generated=generated, type=types,
                    language=language)


def read_file(path: Path) -> list[BenchRow]:
    split, kind = _place(path)
    rows = []
    for n, line in enumerate(read_user_text(path, "a RoleBench JSONL file", MAX_FILE_BYTES).splitlines(), 1):
        if line.strip():
            rows.append(_row(line, path, n, split, kind, path.stem))
    if not rows:
        raise InputError(f"{path}: the file holds no rows")
    return rows


def data_files(paths: Sequence[str], parts: Iterable[str] = ("test",)) -> list[str]:
    """The RoleBench files ``paths`` stand for: a file as given (whatever its name), and every ``<part>.jsonl``
    under a folder; a folder without any, or a path that does not exist, is an error."""
    wanted = set(parts)
    out: list[str] = []
    for p in map(Path, paths):
        if p.is_dir():
            files = sorted(f for f in p.rglob("*.jsonl") if f.stem in wanted)
            if not files:
                there = sorted({f.stem for f in p.rglob("*.jsonl") if not any(d.startswith("profiles-") for d in
                                f.relative_to(p).parts)} - {"rolegpt_baseline"})  # a profile's script is no part
                near = close_match(next(iter(wanted)), there) if len(wanted) == 1 else None
                guess = f"did you mean {near}.jsonl? " if near else ""
                holds = f"its files: {', '.join(f'{t}.jsonl' for t in there)}" if there else \
                    "expected RoleBench's layout: rolebench-eng/..., rolebench-zh/..."
                raise InputError(f"{p}: no {' or '.join(sorted(f'{w}.jsonl' for w in wanted))} in this folder "
                                 f"({guess}{holds})")
            out += [str(f) for f in files]
        elif p.exists():
            out.append(str(p))
        else:
            raise InputError(f"{p}: no such file or folder")
    return out


def baseline_files(files: Sequence[str]) -> list[str]:
    """The ``rolegpt_baseline.jsonl`` beside each test file, where there is one."""
    found = {str(Path(f).with_name("rolegpt_baseline.jsonl")) for f in files}
    return sorted(f for f in found if Path(f).is_file() and f not in files)


def read_rolebench(paths: Sequence[str], parts: Iterable[str] = ("test",)) -> list[BenchRow]:
    """The rows of ``data_files(paths, parts)``, in file order."""
    return [row for f in data_files(paths, parts) for row in read_file(Path(f))]


def write_rows(path: Path, rows: Iterable[Mapping[str, object]],
               keys: Sequence[str] = ("role", "question", "generated", "type")) -> Path:
    """RoleBench's layout: one JSON object per line (``role``, ``question``, ``generated``, ``type`` if given),
    non-ASCII written as is."""
    lines = [json.dumps({k: r[k] for k in keys if k in r}, ensure_ascii=False) for r in rows]
    atomic_write_bytes(path, "".join(f"{line}\n" for line in lines).encode("utf-8"))
    return path


def first_rows(files: Sequence[str], limit: int | None) -> list[BenchRow]:
    """The rows of ``files``; with ``limit``, the first ``limit`` of each role in each file."""
    rows = []
    for f in files:
        seen: dict[str, int] = defaultdict(int)
        for r in read_file(Path(f)):
            seen[r.role] += 1
            if limit is None or seen[r.role] <= limit:
                rows.append(r)
    return rows
