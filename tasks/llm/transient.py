"""Which provider errors are worth retrying.

Rate limits, timeouts, dropped connections, 5xx answers and bodies that are
not valid JSON are transient: the same request may well succeed later. Bad
requests, auth failures and context overflows are not: retrying only burns
time, so they fail at once.
"""

from __future__ import annotations

import json

import litellm

TRANSIENT_TYPES: tuple[type[BaseException], ...] = (
    litellm.RateLimitError,
    litellm.Timeout,
    litellm.APIConnectionError,
    litellm.InternalServerError,
    litellm.ServiceUnavailableError,
    litellm.BadGatewayError,
    TimeoutError,
    ConnectionError,
    json.JSONDecodeError,
)


class WorkerCallError(Exception):
    """A call that failed in a gateway worker process, which already judged it: ``transient`` or not."""

    def __init__(self, message: str, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


PERMANENT_TYPES: tuple[type[BaseException], ...] = (
    litellm.AuthenticationError,
    litellm.PermissionDeniedError,
    litellm.ContextWindowExceededError,
    litellm.ContentPolicyViolationError,
    litellm.NotFoundError,
)


# What a JSON decoder says about a cut-off or garbled body (json's own messages, and the word itself).
_UNREADABLE_BODY = ("json", "expecting value", "expecting ',' delimiter", "expecting property name",
                    "unterminated string", "extra data", "invalid control character")


def _unreadable_body(exc: BaseException) -> bool:
    """litellm's generic APIError for a reply whose body could not be read.

    Some routes (``hosted_vllm/``, the OpenAI-compatible servers of vLLM and llama.cpp) report it with the
    reply's own status, 200: the server answered, but what arrived was malformed or truncated, so the
    same request may well succeed again.
    """
    if not isinstance(exc, litellm.APIError):
        return False
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and 400 <= status < 500:  # the server refused the request (say, a bad schema)
        return False
    return (isinstance(status, int) and 200 <= status < 300) or any(m in str(exc).lower() for m in _UNREADABLE_BODY)


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, WorkerCallError):
        return exc.transient
    if isinstance(exc, PERMANENT_TYPES):
        return False
    if isinstance(exc, TRANSIENT_TYPES) or _unreadable_body(exc):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)
