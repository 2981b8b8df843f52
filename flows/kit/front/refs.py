"""References a mode's spec names its parts by, loaded only when they are used."""

from __future__ import annotations

import importlib
from typing import Any

# "package.module:attribute", or the object itself.
Ref = Any


def load_ref(ref: Ref) -> Any:
    """The object a reference names (a reference that is not a string is the object)."""
    if not isinstance(ref, str):
        return ref
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ValueError(f"'{ref}' is not a 'package.module:attribute' reference")
    found: Any = importlib.import_module(module)
    for part in attr.split("."):
        found = getattr(found, part)
    return found
