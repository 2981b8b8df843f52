"""Keep API keys out of logs, tables, artifacts and manifests.

Keys come only from the environment. Anything that leaves the process passes
through ``scrub``, which replaces the value of every secret variable: one whose
name looks secret (``*_KEY``, ``*TOKEN*``...) and every variable a models file
names as holding a key (``api_key_env``), whatever it is called.
``install_log_redaction`` does the same for every log record, whichever logger
(ours, Prefect's, litellm's) made it.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
SECRET_FIELD = re.compile(r"^(api_key|authorization|password|secret|token)$", re.IGNORECASE)
MASK = "***"
_MIN_SECRET_LEN = 6
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_named: set[str] = set()  # variables named as key holders by a models file
_pasted: set[str] = set()  # keys pasted where a variable name belongs


def register_secret_names(names: set[str] | list[str]) -> None:
    """Treat these variables as secrets from now on (a models file's ``api_key_env`` names)."""
    _named.update(names)


def register_pasted_key(value: str) -> None:
    """A key written where a variable name belongs: masked everywhere from now on."""
    if len(value) >= _MIN_SECRET_LEN:
        _pasted.add(value)


def looks_like_key(name: str) -> bool:
    """Whether an ``api_key_env`` value is a key itself rather than the name of a variable.

    Not a possible variable name at all (``sk-...``), or unset, long, and mixing lower case with digits
    the way generated keys do and variable names do not.
    """
    if not ENV_NAME.match(name):
        return True
    return (name not in os.environ and len(name) >= 20 and any(c.isdigit() for c in name)
            and any(c.islower() for c in name))


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if (SECRET_NAME.search(k) or k in _named) and len(v) >= _MIN_SECRET_LEN}
    values |= _pasted
    # Longest first, so a key that contains another is masked whole.
    return sorted(values, key=len, reverse=True)


def scrub_text(text: str, secrets: list[str] | None = None) -> str:
    for value in secret_values() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, MASK)
    return text


def scrub(obj: Any, secrets: list[str] | None = None) -> Any:
    """Return a copy of ``obj`` with secret values masked in every string and secret-named fields blanked."""
    secrets = secret_values() if secrets is None else secrets
    if isinstance(obj, str):
        return scrub_text(obj, secrets)
    if isinstance(obj, dict):
        return {
            k: (MASK if isinstance(k, str) and SECRET_FIELD.match(k) and v else scrub(v, secrets))
            for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        return type(obj)(scrub(v, secrets) for v in obj)
    return obj


_installed = False


def install_log_redaction() -> None:
    """Mask secrets in every log record created from now on (idempotent)."""
    global _installed
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        secrets = secret_values()
        if secrets:
            try:
                message = record.getMessage()
            except Exception:  # a broken format string is the logger's problem, not ours
                return record
            cleaned = scrub_text(message, secrets)
            if cleaned != message:
                record.msg, record.args = cleaned, ()
        return record

    logging.setLogRecordFactory(factory)
    _installed = True
