"""Language codes a user writes (``en``, ``ru``, ``zh-Hant``) and the names prompts use for them (langcodes)."""

from __future__ import annotations

import functools


def is_language_code(code: str) -> bool:
    import langcodes

    return bool(code) and langcodes.tag_is_valid(code)


@functools.cache
def language_name(code: str) -> str:
    """The English name of a language code ("ru" -> "Russian"), for prompts written in English."""
    import langcodes

    return str(langcodes.Language.get(code).display_name("en"))
