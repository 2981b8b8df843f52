"""Prompt templates (Jinja2, StrictUndefined) and their rendering.

Templates live beside this file as ``<mode>[/<part>]/<name>.<lang>.j2``. A missing
variable is an error, never an empty string. Every render records the
template's SHA-256 in the run it belongs to (``record_into``), so a run's
manifest says exactly which prompt text made its calls, even when one process
runs several flows.
"""

from __future__ import annotations

import functools
import hashlib
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, TemplateNotFound

TEMPLATE_DIR = Path(__file__).resolve().parent
FALLBACK_LANGUAGE = "en"

_env = Environment(
    loader=FileSystemLoader(TEMPLATE_DIR),
    undefined=StrictUndefined,
    keep_trailing_newline=False,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
)
# Where renders in the current context are recorded: the template log of the run being worked on.
_recorder: ContextVar[dict[str, str] | None] = ContextVar("rpbench_prompt_recorder", default=None)


@dataclass(frozen=True)
class Rendered:
    text: str
    template: str
    sha256: str


def template_name(name: str, language: str) -> str:
    """``group/name`` in ``language``, falling back to English only when no variant exists at all."""
    try:  # the folder's time changes when a template is added or removed there: then it is looked up again
        folder_ns = (TEMPLATE_DIR / name).parent.stat().st_mtime_ns
    except OSError:
        raise TemplateNotFound(f"{name}.{language}.j2") from None
    return _template_name(name, language, folder_ns)


@functools.lru_cache(maxsize=1024)
def _template_name(name: str, language: str, folder_ns: int) -> str:
    # Cached: every call of a stage renders its prompt, and two file lookups a call add up at 100,000 calls.
    for lang in (language, FALLBACK_LANGUAGE):
        candidate = f"{name}.{lang}.j2"
        if (TEMPLATE_DIR / candidate).is_file():
            return candidate
    raise TemplateNotFound(f"{name}.{language}.j2")


def languages(name: str) -> list[str]:
    """The languages ``group/name`` is written in (one file each: ``group/name.<language>.j2``)."""
    folder = (TEMPLATE_DIR / name).parent
    stem = Path(name).name
    return sorted(p.name[len(stem) + 1:-len(".j2")] for p in folder.glob(f"{stem}.*.j2"))


def template_sha256(path: str) -> str:
    return _sha256(path, (TEMPLATE_DIR / path).stat().st_mtime_ns)


@functools.lru_cache(maxsize=512)
def _sha256(path: str, mtime_ns: int) -> str:
    # Keyed by modification time as well: an edited template gets a new hash, as Jinja reloads it.
    return hashlib.sha256((TEMPLATE_DIR / path).read_bytes()).hexdigest()


def record_into(used: dict[str, str]) -> None:
    """Record every render from here on in this context (and in tasks it starts) into ``used``: path to SHA-256."""
    _recorder.set(used)


def render(template: str, language: str = "en", /, **variables: Any) -> Rendered:
    """Render ``template`` (``group/name``) in ``language``; positional-only so any variable name is free."""
    path = template_name(template, language)
    text = _env.get_template(path).render(**variables).strip()
    digest = template_sha256(path)
    used = _recorder.get()
    if used is not None:
        used[path] = digest
    return Rendered(text=text, template=path, sha256=digest)


def source(template: str, language: str = "en", /) -> str:
    """A template's own text, unrendered: for templates another engine renders (a chat template that
    transformers applies to messages). Recorded like a render."""
    path = template_name(template, language)
    used = _recorder.get()
    if used is not None:
        used[path] = template_sha256(path)
    return (TEMPLATE_DIR / path).read_text(encoding="utf-8")


def all_templates() -> dict[str, str]:
    return {
        str(p.relative_to(TEMPLATE_DIR)): template_sha256(str(p.relative_to(TEMPLATE_DIR)))
        for p in sorted(TEMPLATE_DIR.rglob("*.j2"))
    }


def templates_digest(names: tuple[str, ...]) -> dict[str, str]:
    """SHA-256 of every template a stage may render: ``group/name`` in every language, or all under ``group/``."""
    everything = all_templates()
    out = {}
    for name in names:
        matches = {p: h for p, h in everything.items()
                   if (p.startswith(name) if name.endswith("/") else p.rsplit(".", 2)[0] == name)}
        if not matches:
            raise TemplateNotFound(name)
        out.update(matches)
    return dict(sorted(out.items()))


def unknown_templates(names: tuple[str, ...]) -> list[str]:
    """The declared names (``group/name`` or ``group/``) no template answers to: a stage declaring one would
    never notice an edit to the template it meant."""
    paths = [str(p.relative_to(TEMPLATE_DIR)) for p in TEMPLATE_DIR.rglob("*.j2")]
    return [n for n in names if not any(covered_by(p, (n,)) for p in paths)]


def covered_by(path: str, names: tuple[str, ...]) -> bool:
    """Whether a rendered template's path is one of ``names`` (as ``templates_digest`` reads them)."""
    return any(path.startswith(n) if n.endswith("/") else path.rsplit(".", 2)[0] == n for n in names)
