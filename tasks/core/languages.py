"""Language codes a user writes (``en``, ``ru``, ``zh-Hant``) and the names prompts use for them (langcodes)."""

from __future__ import annotations

import functools


def is_language_code(code: str) -> bool:
    """A well-formed language tag whose language is a known one ("xx" and "qaa" are not; "tlh" is)."""
    import langcodes

    if not code or not langcodes.tag_is_valid(code):
        return False
    return not str(langcodes.Language.get(code).display_name("en")).startswith("Unknown language")


@functools.cache
def language_name(code: str) -> str:
    """The English name of a language code ("ru" -> "Russian"), for prompts written in English."""
    import langcodes

    return str(langcodes.Language.get(code).display_name("en"))
