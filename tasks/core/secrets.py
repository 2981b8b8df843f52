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
from urllib.parse import parse_qsl, urlsplit, urlunsplit

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
# A field (or an HTTP header a models file's ``extra`` sends) holding a secret. Not a bare "key": a profile's
# entries are {key, value} pairs.
SECRET_FIELD = re.compile(r"^(x-)?(api[-_]?key|authorization|password|secret|token|access[-_]token|auth[-_]token)$",
                          re.IGNORECASE)
# A server address's query parameter holding one (``?key=...`` is how some proxies take a key).
SECRET_PARAMETER = re.compile(r"^(key|api[-_]?key|token|access[-_]token|auth[-_]token|password|secret|sig|"
                              r"signature)$", re.IGNORECASE)
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


def url_secrets(url: str) -> list[str]:
    """What in a server address is a secret: a password written into it (``https://user:pw@host``), with the
    part of the address holding it (``user:pw@host``: another library's log line quoting the address hides
    even a password too short to be masked by itself), and the values of query parameters named like keys
    (``?key=...``, as some proxies take one)."""
    parts = urlsplit(url)
    found = [parts.password, parts.netloc] if parts.password else []
    return found + [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if SECRET_PARAMETER.match(k) and v]


def redact_url(url: str) -> str:
    """The address with ``url_secrets`` masked, whatever their length (``scrub`` masks only long values)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password:
        netloc = netloc.replace(f":{parts.password}@", f":{MASK}@", 1)
    query = "&".join(f"{k}={MASK}" if SECRET_PARAMETER.match(k) and v else (f"{k}={v}" if v else k)
                     for k, v in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)) if url_secrets(url) else url


def field_secrets(obj: Any) -> list[str]:
    """The text values of secret-named fields anywhere in ``obj`` (a header ``Authorization`` in ``extra``)."""
    if isinstance(obj, dict):
        return [x for k, v in obj.items() for x in
                ([v] if isinstance(k, str) and SECRET_FIELD.match(k) and isinstance(v, str) and v
                 else field_secrets(v))]
    if isinstance(obj, (list, tuple)):
        return [x for v in obj for x in field_secrets(v)]
    return []


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
