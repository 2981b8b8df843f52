"""The critic: one call per dimension of a model's scene, in CoSER's own words (``prompts.py``'s critic template
and dimensions, filled as ``gca_judging`` fills them): the original conversation, the profiles, the plot summary
and the scenario, flaws listed in CoSER's layout; the dimension's score is CoSER's length-corrected deduction
(``scoring``)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, create_model

from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.requests import CallResult
from rpbench.tasks.llm.structured import StatedInPrompt
from rpbench.tasks.modes.coser import release
from rpbench.tasks.modes.coser.acting import model_name, resampled_all
from rpbench.tasks.modes.coser.records import DIMENSIONS, Circumstance, Critique, Flaw, Message
from rpbench.tasks.modes.coser.scoring import (
    actor_rounds,
    dimension_score,
    original_lines,
    original_text,
    scene_messages,
    scene_text,
)


class FlawReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instance: str = Field(description="where the flaw is and what is wrong")
    type: str = Field(description="the flaw's type, as the criteria name it")
    # Severity 1-5; a mechanical repetition may go up to 10 (CoSER's criteria say so).
    severity: int = Field(ge=1, le=10)


class FlawsReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    flaws: list[FlawReply]


@functools.cache
def critique_schema(dimension: str) -> type[BaseModel]:
    """CoSER's critique layout as a schema: ``{"<dimension>": {"flaws": [{"instance", "type", "severity"}]}}``
    (the dimension's name, spaces and all, is the key), so released critiques read back as they are."""
    name = "CoserCritique" + re.sub(r"[^A-Za-z0-9]", "", dimension)
    return create_model(name, __base__=_Critique, flaws_of=(FlawsReply, Field(alias=dimension)))


class _Critique(StatedInPrompt):
    """The critic's reply: its prompt shows the JSON it wants (no response format is added to the request)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def critic_prompt(c: Circumstance, dimension: str, continue_from: int) -> str:
    """CoSER's critic template for ``dimension``, its placeholders replaced in gca_judging's order (so a
    placeholder inside a value put in later, the criteria's ``{major_characters}``, stays as it is)."""
    prompts = release.critic_prompts()
    details = prompts["dimension_details"][dimension]
    values = {
        "{book}": c.book, "{plot_summary}": c.plot_summary, "{scenario}": c.scenario,
        "{character_profiles}": "\n\n".join(f"### {p.speaker}\n\n{p.text}" for p in c.profiles),
        "{original_conversation}": original_text(original_lines(c.original)),
        "{major_characters}": ", ".join(c.major),
        "{additional_instructions}": release.continued_note().fill({"args.continue_from": continue_from})
        if continue_from > 0 else "",
        "{dimension_name}": dimension, "{dimension_brief}": details["dimension_brief"],
        "{dimension_criteria}": details["dimension_criteria"],
    }
    text = str(prompts["self-play-deduct-template"])
    for hole in release.critic_replacements():
        text = text.replace(hole, values[hole])
    return text


def critic_request(c: Circumstance, turns: Sequence[Message], dimension: str, role: str, model: str,
                   continue_from: int, critic_model: str) -> Request[BaseModel]:
    """The critic's prompt as its system message (a Claude's as the user's, as get_response sends it), the scene
    as the user's."""
    first = "user" if critic_model.startswith("claude") else "system"
    return Request(role, [{"role": first, "content": critic_prompt(c, dimension, continue_from)},
                          {"role": "user", "content": scene_text(turns)}],
                   schema=critique_schema(dimension), tag=f"coser:{c.circumstance_id}:{model}:critic:{dimension}")


def critiques_of(c: Circumstance, messages: Sequence[Message], model: str,
                 results: Sequence[CallResult[BaseModel]]) -> list[Critique]:
    """The four dimensions' critiques (in ``DIMENSIONS`` order) from their calls' results."""
    rounds = actor_rounds(scene_messages(messages))
    out = []
    for dimension, res in zip(DIMENSIONS, results, strict=True):
        if res.ok and res.parsed is not None:
            flaws = [Flaw(instance=f.instance, type=f.type, severity=f.severity)
                     for f in res.parsed.flaws_of.flaws]  # type: ignore[attr-defined]
            out.append(Critique(circumstance_id=c.circumstance_id, model=model, dimension=dimension, flaws=flaws,
                                actor_rounds=rounds, score=dimension_score(flaws, rounds), status="ok",
                                text=res.text))
        else:
            out.append(Critique(circumstance_id=c.circumstance_id, model=model, dimension=dimension, flaws=[],
                                actor_rounds=rounds, score=None, status="failed", text=res.text, error=res.error))
    return out


async def criticise(gateway: Model, scenes: Sequence[tuple[Circumstance, Sequence[Message]]], model: str, role: str,
                    continue_from: int) -> list[Critique]:
    """Every dimension of every scene, each asked as the release asks: a critique that cannot be read is asked
    again at temperature 1, up to five times more, then a counted failure."""
    critic_model = model_name(gateway.model_of(role))
    requests = [critic_request(c, scene_messages(m), d, role, model, continue_from, critic_model)
                for c, m in scenes for d in DIMENSIONS]
    results = await resampled_all(gateway, requests, [role])
    out: list[Critique] = []
    for k, (c, m) in enumerate(scenes):
        out += critiques_of(c, m, model, results[k * len(DIMENSIONS):(k + 1) * len(DIMENSIONS)])
    return out
