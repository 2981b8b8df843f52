"""PingPong's released templates as the source of its words, rendered as its code renders them (never copied).

IlyaGusev/ping_pong_bench at 4e3b0e0 states every prompt as a Jinja template: the player's card
(``en_character.jinja``, ``ru_character.jinja``), v2's interrogator and judge, v1's combined tester. Its
``encode_prompt`` renders a template with Jinja's defaults and strips the result; rpbench does the same with the
pinned file's text (in Jinja's sandbox: a template is data, never code), with the values its scripts pass.
"""

from __future__ import annotations

import functools
from typing import Any

from jinja2.sandbox import SandboxedEnvironment

from rpbench.prompts.releases import Release, read_text

RELEASE = Release(
    benchmark="pingpong",
    repository="IlyaGusev/ping_pong_bench",
    commit="4e3b0e0b6b093670f67b80d7d62b5a5e8e7b13fd",
    about="the player's character cards (en, ru), v2's interrogator and judge, v1's tester",
    files={
        "templates/en_character.jinja": "1ce27e5217597130b84ab0dc7ff9dff911bdf0b44f1168573564b83834947c12",
        "templates/ru_character.jinja": "2feb0ec92f59d047b3f3fbd4ffd109b2373ed71f057bf2bb6b5613f2844d4d91",
        "templates/v1/system.jinja": "07da4b721b346c4580dccc8c10d25b4eb5b20f7851f0a3aecc8ac894ee81a92b",
        "templates/v1/user.jinja": "50fa533d6679a5c5a45876ff1c7aedcf4b7da975f7adad60c8c123e4709a8799",
        "templates/v2/interrogator_system.jinja": "542d9eb59772ee6fe72f40e47024807a7e9c68f2ba5ef634bce6d550ebebdb7d",
        "templates/v2/interrogator_user.jinja": "b7802044a0e4a7954db0281bc88235e14fd96a186171125e52471376da99ac54",
        "templates/v2/judge_system.jinja": "b3621377ab78ea314f5ae03ac789fa41782cca8ade9473b2402dd8607f0eab7c",
        "templates/v2/judge_user.jinja": "ee2601db6e87c4bedb20c87d06cb3b9ed8bebbe4ee85bb19a6403aa8a652488b",
    },
)
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
