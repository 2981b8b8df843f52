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


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, WorkerCallError):
        return exc.transient
    if isinstance(exc, PERMANENT_TYPES):
        return False
    if isinstance(exc, TRANSIENT_TYPES):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status == 429 or status >= 500
    # litellm wraps an unparseable response body in a generic APIError without a usable status.
    return isinstance(exc, litellm.APIError) and "json" in str(exc).lower()
