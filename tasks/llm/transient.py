"""Which provider errors are worth retrying.

Rate limits, timeouts, dropped connections, 5xx answers and bodies that are
not valid JSON are transient: the same request may well succeed later. Bad
requests, auth failures and context overflows are not: retrying only burns
time, so they fail at once.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import litellm
import openai
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from rpbench.tasks.llm.call_errors import MissingKeyError, WorkerCallError

if TYPE_CHECKING:
    from rpbench.tasks.llm.config import RetryPolicy

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
    openai.APIConnectionError,  # litellm's files and batches calls pass the SDK's own errors through unmapped
)


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


# The model cannot be used by this run at all: its key is missing or refused, or the provider does not know it.
# Every later call would fail the same way, so the run stops at the first one instead of failing each item.
FATAL_TYPES: tuple[type[BaseException], ...] = (
    litellm.AuthenticationError,
    litellm.PermissionDeniedError,
    litellm.NotFoundError,
    MissingKeyError,
)


# litellm reports some missing keys under other types: OpenAI's as a 500 ("Missing credentials"), Gemini's as
# a connection error ("Missing Gemini API key"). Retried, each would cost the whole backoff for nothing.
_MISSING_KEY = re.compile(r"missing credentials|missing [\w ]{0,40}api[ _]key|api_key client option must be set",
                          re.IGNORECASE)


def is_fatal(exc: BaseException) -> bool:
    if isinstance(exc, WorkerCallError):
        return exc.fatal
    if isinstance(exc, FATAL_TYPES):
        return True
    return getattr(exc, "status_code", None) in (401, 403) or bool(_MISSING_KEY.search(str(exc)[:2000]))


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, WorkerCallError):
        return exc.transient
    if isinstance(exc, PERMANENT_TYPES) or is_fatal(exc):
        return False
    if isinstance(exc, TRANSIENT_TYPES) or _unreadable_body(exc):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


def retrying(policy: RetryPolicy, attempts: int | None = None) -> AsyncRetrying:
    """Transient failures tried again under the run's retry policy (``attempts`` tries, by default the
    policy's), with exponential backoff and jitter; any other failure, or the last, is raised as it was."""
    return AsyncRetrying(stop=stop_after_attempt(policy.transient_attempts if attempts is None else attempts),
                         wait=wait_exponential_jitter(initial=policy.backoff_initial, max=policy.backoff_max),
                         retry=retry_if_exception(is_transient), reraise=True)
