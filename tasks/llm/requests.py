"""What a stage asks a model and what it gets back, and the small interface stages call: no litellm here.

Stages type against ``Model`` (``complete``, ``run``, ``run_all``); the gateway
implements it with litellm and the local engines, and tests may pass a
scripted implementation. Importing this module is cheap, so code that only
builds requests or reads replies never loads the gateway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, overload

from pydantic import BaseModel

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
Message = dict[str, Any]


@dataclass(frozen=True)
class Reply(Generic[T]):
    """A usable reply: its text and, when a schema was asked for, the validated object."""

    role: str
    model: str
    text: str
    parsed: T
    attempts: int
    cached: bool
    raw_replies: tuple[str, ...] = ()
    ok: Literal[True] = True
    status: Literal["ok"] = "ok"
    error: None = None


@dataclass(frozen=True)
class NoReply:
    """No usable reply: the error, and the last raw text if the model answered at all. Never a default."""

    role: str
    model: str
    text: str | None
    error: str
    attempts: int
    cached: bool = False
    raw_replies: tuple[str, ...] = ()
    ok: Literal[False] = False
    status: Literal["failed"] = "failed"
    parsed: None = None


# ``if result.ok:`` narrows a CallResult to the Reply, whose ``parsed`` is then the schema's type.
CallResult = Reply[T] | NoReply


# Reads a free-text reply (the option letters in it, say); raises ValueError, saying what is missing, when the
# reply holds nothing it can use. The gateway then asks again, as it does for a reply that breaks a schema.
Parser = Callable[[str], Any]


@dataclass(frozen=True)
class Request(Generic[T]):
    """One call for ``Gateway.run_all``; ``schema`` None asks for free text (a ``Request[None]``), which
    ``parse`` (if given) reads into ``parsed``."""

    role: str
    messages: list[Message]
    schema: type[BaseModel] | None = None
    sample_index: int = 0
    tag: str | None = None
    parse: Parser | None = None
    # The free-text reply that would end the dialogue this call belongs to ("Next Speaker: <END CHAT>"), for a
    # plan's shortest pass (a schema offers its ending as an option instead); None: the call ends nothing.
    ends: str | None = None
    # Replies asked for at most before an unusable one is a failure (a benchmark whose release takes one reply
    # gives 1); None: the models file's retry policy (parse_attempts).
    attempts: int | None = None
    # Sampling settings of this request over its role's (a release that asks again at temperature 1, say): sent,
    # and part of the call's cache key, like the role's own.
    sampling: Mapping[str, Any] | None = None


class Model(Protocol):
    """Role-addressed access to models: what every stage needs of the gateway."""

    def model_of(self, role: str) -> str:
        """The model string ``role`` resolves to (what a table records as the model that answered)."""
        ...

    @overload
    async def complete(self, role: str, messages: list[Message], *, schema: type[M],
                       sample_index: int = 0, tag: str | None = None, parse: None = None) -> CallResult[M]: ...

    @overload
    async def complete(self, role: str, messages: list[Message], *, schema: None = None,
                       sample_index: int = 0, tag: str | None = None,
                       parse: Parser | None = None) -> CallResult[Any]: ...

    async def complete(self, role: str, messages: list[Message], *, schema: type[BaseModel] | None = None,
                       sample_index: int = 0, tag: str | None = None,
                       parse: Parser | None = None) -> CallResult[Any]:
        """Ask the model bound to ``role``: a usable reply, or a NoReply saying why not (never a default)."""
        ...

    async def run(self, req: Request[T]) -> CallResult[T]:
        """``complete`` for a prepared ``Request``."""
        ...

    async def run_all(self, requests: Sequence[Request[T]], *, limit: int = ...,
                      on_done: Callable[[int, int], Any] | None = None,
                      roles: Iterable[str] | None = None) -> list[CallResult[T]]:
        """Many requests concurrently under the model's bounds, results in request order."""
        ...
