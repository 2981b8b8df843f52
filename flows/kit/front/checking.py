"""A mode's input check, run once per run: by the command before any flow starts, and by the flow only when
no command ran it (a deployment, a trigger, a flow called from code).

``checked(check, settings)`` remembers what ``check`` returned for these settings while the files they name are
unchanged (size and modification time; any field's text that names a file counts, a path or NAME=FILE), so the
flow's own call returns the command's result instead of reading every input again. Prefect-free, like the
checks themselves.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

S = TypeVar("S", bound=BaseModel)
T = TypeVar("T")

_KEPT = 8  # a served process runs many flows one after another: a few recent checks are enough
_done: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_lock = threading.Lock()


def _stamp(value: Any) -> tuple[Any, ...]:
    """Size and modification time of every file ``value`` may name: a path, or the FILE of ``NAME=FILE`` (how
    --answers names a system's file, which no path field marks)."""
    paths = value if isinstance(value, list | tuple) else [value]
    out: list[Any] = []
    for p in paths:
        if not isinstance(p, str) or not p:
            continue
        for candidate in (p, p.partition("=")[2]) if "=" in p else (p,):
            try:
                st = Path(candidate).stat()
                out.append((candidate, st.st_size, st.st_mtime_ns))
            except OSError:
                out.append((candidate, None))  # checking it says what is wrong
    return tuple(out)


def _key(check: Callable[..., Any], settings: BaseModel) -> tuple[Any, ...]:
    files = tuple(_stamp(getattr(settings, name)) for name in type(settings).model_fields)
    return (check.__module__, check.__qualname__, type(settings).__qualname__, settings.model_dump_json(), files)


def checked(check: Callable[[S], T], settings: S) -> T:
    """``check(settings)``, or what it returned for the same settings and unchanged files in this process."""
    key = _key(check, settings)
    with _lock:
        if key in _done:
            _done.move_to_end(key)
            return _done[key]
    result = check(settings)
    with _lock:
        _done[key] = result
        while len(_done) > _KEPT:
            _done.popitem(last=False)
    return result
