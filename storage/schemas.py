"""Tables shared by every benchmark mode, and the ``TableSpec`` every table is declared with.

A table is a record model (``rpbench.tasks.core.records`` or a mode's own), a
name and a schema version; its Arrow schema is derived from the record. Bump a
table's version when its columns change in a way old readers cannot handle;
``storage.tables.read_table`` refuses files newer than it knows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

import pyarrow as pa
from pydantic import BaseModel

from rpbench.storage.arrow import arrow_schema
from rpbench.tasks.core.records import CallRecord, Failure, JudgeAgreement

R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class TableSpec(Generic[R]):
    name: str
    version: int
    record: type[R]
    schema: pa.Schema = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", arrow_schema(self.record))

    @property
    def filename(self) -> str:
        return f"{self.name}.parquet"


# One row per LLM request the gateway answered (from the model or from the call cache).
CALLS = TableSpec("calls", 3, CallRecord)  # 3: cached_prompt_tokens
# Work that produced no usable result, per stage: counted in reports, never turned into a default.
FAILURES = TableSpec("failures", 1, Failure)
AGREEMENT = TableSpec("agreement", 1, JudgeAgreement)  # a judge against people, wherever people scored
JUDGES = TableSpec("judges", 1, JudgeAgreement)  # a suite's: every benchmark's agreement rows together
