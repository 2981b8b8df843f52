"""Atomic Parquet writes and validating reads, of rows or of typed records.

Every table rpbench writes carries its name and schema version in the Parquet
metadata, so a read can tell a stale or foreign file from a good one and say
so in one line.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ValidationError

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.core.errors import InputError, first_error

META_NAME = b"rpbench.table"
META_VERSION = b"rpbench.schema_version"
R = TypeVar("R", bound=BaseModel)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a file so that a reader sees either the old content or the new, never half."""
    atomic_write_chunks(path, [data])


def atomic_write_chunks(path: Path, chunks: Iterable[bytes]) -> None:
    """``atomic_write_bytes`` for content made piece by piece: only one piece is held at a time (a page of
    100,000 samples is written as it is made, not built whole in memory first)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def to_arrow(rows: Iterable[Mapping[str, Any]] | pa.Table, spec: TableSpec[Any]) -> pa.Table:
    """Build a table of exactly the spec's schema from rows (missing nullable columns become null)."""
    if isinstance(rows, pa.Table):
        missing = [f.name for f in spec.schema if f.name not in rows.column_names]
        if missing:
            raise ValueError(f"table {spec.name}: missing columns {missing}")
        return rows.select([f.name for f in spec.schema]).cast(spec.schema)
    rows = list(rows)
    columns = {f.name: [r.get(f.name) for r in rows] for f in spec.schema}
    for i, row in enumerate(rows):
        unknown = set(row) - set(columns)
        if unknown:
            raise ValueError(f"table {spec.name}: row {i} has unknown columns {sorted(unknown)}")
    return pa.Table.from_pydict(columns, schema=spec.schema)


def load_table_libraries() -> None:
    """Build one small table, once: the first table pyarrow builds from Python values imports pandas (to tell
    pandas objects apart) and its compute functions, which a run otherwise spends as its first stage ends,
    after its last answer (a run calls this while it waits on its models)."""
    pa.Table.from_pydict({"warm": [1]}, schema=pa.schema([("warm", pa.int64())]))


def write_table(path: str | Path, rows: Iterable[Mapping[str, Any]] | pa.Table, spec: TableSpec[Any],
                metadata: Mapping[bytes, bytes] | None = None) -> Path:
    """Validate rows against ``spec`` and write them atomically as Parquet (``metadata``: more of the file's
    key-value metadata)."""
    path = Path(path)
    table = to_arrow(rows, spec)
    meta = {**(table.schema.metadata or {}), **(metadata or {})}
    meta[META_NAME] = spec.name.encode()
    meta[META_VERSION] = str(spec.version).encode()
    table = table.replace_schema_metadata(meta)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    atomic_write_bytes(path, sink.getvalue().to_pybytes())
    return path


RECORDS_PER_BATCH = 10_000


def write_records(path: str | Path, records: Iterable[R], spec: TableSpec[R]) -> Path:
    """Write typed records as the table ``spec`` describes.

    Turned into columns a batch at a time, taken from ``records`` as they come: the records as dictionaries,
    all at once, were a second copy of a 100,000-row stage in memory (Arrow's columns take a fraction of
    that), and a stage's call records are read back from their JSON lines one batch at a time."""
    rows = iter(records)
    batches = []
    while batch := list(itertools.islice(rows, RECORDS_PER_BATCH)):
        batches.append(to_arrow([r.model_dump() for r in batch], spec))
    if len(batches) <= 1:
        return write_table(path, batches[0] if batches else [], spec)
    return write_table(path, pa.concat_tables(batches), spec)


def read_parquet(path: str | Path) -> pa.Table:
    """A Parquet file whatever its columns (a leaderboard's vary by mode); a damaged one is one clear line."""
    try:
        return pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None


def read_table(path: str | Path, spec: TableSpec[Any]) -> pa.Table:
    """Read a table and check that it is the table ``spec`` describes, failing with one clear line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: table '{spec.name}' not found")
    table = read_parquet(path)
    meta = table.schema.metadata or {}
    name = meta.get(META_NAME, b"").decode()
    if name and name != spec.name:
        raise InputError(f"{path}: holds table '{name}', expected '{spec.name}'")
    version = meta.get(META_VERSION, b"").decode()
    if version and int(version) > spec.version:
        raise InputError(
            f"{path}: table '{spec.name}' has schema version {version}, newer than this rpbench reads ({spec.version})"
        )
    for field in spec.schema:
        if field.name not in table.column_names:
            if version and int(version) < spec.version and field.nullable:
                # A column added since this table was written: unknown in it (null), as its record allows.
                table = table.append_column(field, pa.nulls(table.num_rows, field.type))
                continue
            raise InputError(f"{path}: table '{spec.name}' lacks column '{field.name}'")
        actual = table.schema.field(field.name).type
        if actual != field.type:
            try:
                table = table.set_column(
                    table.column_names.index(field.name), field.name, table.column(field.name).cast(field.type)
                )
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise InputError(
                    f"{path}: column '{field.name}' has type {actual}, expected {field.type}"
                ) from None
    return table.select([f.name for f in spec.schema])


def read_rows(path: str | Path, spec: TableSpec[Any]) -> list[dict[str, Any]]:
    return read_table(path, spec).to_pylist(maps_as_pydicts="strict")  # map columns back as dicts


def run_table(run: str | Path, spec: TableSpec[Any], command: str) -> Path:
    """The file of a table a finished run wrote, or an input error saying which command writes it."""
    path = Path(run) / spec.filename
    if not path.is_file():
        raise InputError(f"{run}: no {spec.filename} (run `{command}` into it first)")
    return path


def run_records(run: str | Path, spec: TableSpec[R], command: str) -> list[R]:
    """The rows of a table a finished run wrote (``run_table``)."""
    return read_records(run_table(run, spec, command), spec)


def read_records(path: str | Path, spec: TableSpec[R]) -> list[R]:
    """The table's rows as validated records; a bad row is an InputError naming the file, the row and the field."""
    out = []
    for i, row in enumerate(read_rows(path, spec)):
        try:
            out.append(spec.record.model_validate(row))
        except ValidationError as exc:
            field, msg = first_error(exc)
            key = next(iter(row.values()), None)
            raise InputError(f"{path}: {spec.name} row {i} ({key}): field '{field}': {msg}") from None
    return out
