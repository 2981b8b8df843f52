"""Writing role profiles the way RoleLLM made its own: choosing roles whose speech is distinct, describing a
role in two steps (third person, without the name; then turned to the second person), and asking for its
catchphrases. Everything goes through the generator role (``rolellm-generator``) as structured replies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeVar

from pydantic import BaseModel, Field

from rpbench import prompts
from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.gather import OnDone
from rpbench.tasks.llm.structured import REASONING
from rpbench.tasks.modes.rolellm.records import ScriptChoice

GENERATOR = "rolellm-generator"
M = TypeVar("M", bound=BaseModel)
DISTINCT_ENOUGH = ("very distinct", "extremely distinct")  # RoleLLM audits the top two levels


class _Choice(BaseModel):
    reason: str = Field(max_length=600, json_schema_extra=REASONING)
    character: str = Field(min_length=1, max_length=120)
    distinctness: Literal["not distinct", "somewhat distinct", "very distinct", "extremely distinct"]


class _Text(BaseModel):
    text: str = Field(min_length=10, max_length=3000)


class _Catchphrases(BaseModel):
    catchphrases: list[str] = Field(max_length=5)


class AuthoringFailed(Exception):
    """A step gave no usable reply after its retries."""


async def select_roles(gateway: Model, scripts: Sequence[tuple[str, str | None]], language: str = "en",
                       on_done: OnDone = None) -> list[ScriptChoice]:
    """For each (script, character or None): the main character and how distinct its speech is."""
    asks: list[Request[_Choice]] = [Request(GENERATOR, [{"role": "user", "content": prompts.render(
        "rolellm/select", language, script=s, character=c).text}], schema=_Choice, tag=f"rolellm:select:{s}")
        for s, c in scripts]
    out = []
    for (script, _), res in zip(scripts, await gateway.run_all(asks, on_done=on_done), strict=True):
        out.append(ScriptChoice(script=script, character=res.parsed.character if res.ok else None,
                                distinctness=res.parsed.distinctness if res.ok else None,
                                reason=res.parsed.reason if res.ok else None, status=res.status, error=res.error))
    return out


async def _ask(gateway: Model, template: str, language: str, schema: type[M], tag: str,
               **variables: object) -> M:
    res = await gateway.complete(GENERATOR, [{"role": "user", "content": prompts.render(
        f"rolellm/{template}", language, **variables).text}], schema=schema, tag=tag)
    if not res.ok:
        raise AuthoringFailed(f"{template}: {res.error}")
    return res.parsed


async def describe(gateway: Model, name: str, script: str, language: str, excerpt: str = ""
                   ) -> tuple[str, list[str]]:
    """A role's description in the second person, and its catchphrases (possibly none)."""
    third = await _ask(gateway, "describe", language, _Text, f"rolellm:describe:{name}", name=name, script=script,
                       excerpt=excerpt)
    second = await _ask(gateway, "second_person", language, _Text, f"rolellm:second-person:{name}",
                        description=third.text)
    said = await _ask(gateway, "catchphrases", language, _Catchphrases, f"rolellm:catchphrases:{name}", name=name,
                      script=script)
    phrases = [p.strip().rstrip("。.") for p in said.catchphrases if p.strip()]
    return second.text.strip(), phrases
