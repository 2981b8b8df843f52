"""Errors a user can act on.

An ``InputError`` names the file, the record and the field that are wrong. The
CLI prints its message on one line and exits non-zero, with no traceback.
"""


class InputError(Exception):
    """Bad input from the user: a file, a record or a field that cannot be used."""
