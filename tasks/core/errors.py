"""Errors a user can act on.

An ``InputError`` names the file, the record and the field that are wrong. The
CLI prints its message on one line and exits non-zero, with no traceback.
"""

from pydantic import ValidationError


class InputError(Exception):
    """Bad input from the user: a file, a record or a field that cannot be used."""


def first_error(exc: ValidationError) -> tuple[str, str]:
    """The first problem of a pydantic ValidationError as (dotted field path, message)."""
    err = exc.errors()[0]
    return ".".join(str(p) for p in err["loc"]) or "record", err["msg"].removeprefix("Value error, ")


def duplicates(values: list) -> list:
    """The values that occur more than once, sorted."""
    return sorted({v for v in values if values.count(v) > 1})
