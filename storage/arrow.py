"""Arrow schemas derived from record models, so each table's columns are written down once."""

from __future__ import annotations

import types
from datetime import datetime
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pyarrow as pa
from pydantic import BaseModel

_SCALARS: dict[Any, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
    datetime: pa.timestamp("ms", tz="UTC"),
}


def _optional(annotation: Any) -> tuple[Any, bool]:
    """(the type without None, whether None was allowed)."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], len(args) < len(get_args(annotation))
    return annotation, False


def arrow_type(annotation: Any) -> pa.DataType:
    annotation, _ = _optional(annotation)
    origin = get_origin(annotation)
    if origin is Annotated:
        return arrow_type(get_args(annotation)[0])
    if origin is Literal:
        return arrow_type(type(get_args(annotation)[0]))
    if origin is list:
        return pa.list_(arrow_type(get_args(annotation)[0]))
    if origin is dict:
        key, value = get_args(annotation)
        return pa.map_(arrow_type(key), arrow_type(value))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct([pa.field(name, arrow_type(f.annotation)) for name, f in annotation.model_fields.items()])
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    raise TypeError(f"no Arrow type for {annotation!r}")


def arrow_schema(record: type[BaseModel]) -> pa.Schema:
    """One column per field; a column is nullable when its field may be None or has a default."""
    fields = []
    for name, f in record.model_fields.items():
        _, optional = _optional(f.annotation)
        fields.append(pa.field(name, arrow_type(f.annotation), nullable=optional or not f.is_required()))
    return pa.schema(fields)
