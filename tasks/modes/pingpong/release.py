"""PingPong's released templates as the source of its words, rendered as its code renders them (never copied).

IlyaGusev/ping_pong_bench at 4e3b0e0 states every prompt as a Jinja template: the player's card
(``en_character.jinja``, ``ru_character.jinja``), v2's interrogator and judge, v1's combined tester. Its
``encode_prompt`` renders a template with Jinja's defaults and strips the result; rpbench does the same with the
pinned file's text (in Jinja's sandbox: a template is data, never code), with the values its scripts pass.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from jinja2.sandbox import SandboxedEnvironment

from rpbench.prompts.releases import Release, read_text

RELEASE = Release.pinned(Path(__file__).with_name("release.toml"))
# The release's character templates by card language; a card in another language has none of its own.
CHARACTER_TEMPLATES = {"en": "templates/en_character.jinja", "ru": "templates/ru_character.jinja"}
_env = SandboxedEnvironment()  # Jinja's defaults, as jinja2.Template(text) has them


@functools.lru_cache(maxsize=32)
def _compiled(text: str) -> Any:
    return _env.from_string(text)


def render(path: str, **values: Any) -> str:
    """The release's template ``path`` rendered with ``values``, stripped, as ``encode_prompt`` does."""
    return str(_compiled(read_text(RELEASE, path)).render(**values)).strip()


def has_character_template(language: str) -> bool:
    return language in CHARACTER_TEMPLATES
