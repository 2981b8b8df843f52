"""The critic: one call per dimension of a model's scene, reading the original conversation, the profiles, the
plot summary and the scenario, and listing flaws in CoSER's layout; the dimension's score is CoSER's
length-corrected deduction (``scoring``)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, create_model

from rpbench import prompts
from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.requests import CallResult
from rpbench.tasks.modes.coser.records import DIMENSIONS, Circumstance, Critique, Flaw, Message
from rpbench.tasks.modes.coser.scoring import (
    actor_rounds,
    dimension_score,
    original_lines,
    original_text,
    scene_messages,
    scene_text,
)

# What each dimension asks, in a phrase (the facts of CoSER's rubric, in our words).
BRIEF = {
    "en": {
        "Storyline Consistency": "whether the storyline and the characters' reactions follow those of the book's "
                                 "conversation",
        "Anthropomorphism": "how much like people, and how naturally, the characters behave",
        "Character Fidelity": "how closely the characters match who they are in the book",
        "Storyline Quality": "how well the conversation holds together and moves as a story",
    },
    "zh": {
        "Storyline Consistency": "故事走向和人物反应是否与原书对话一致",
        "Anthropomorphism": "人物的言行是否像真实的人、是否自然",
        "Character Fidelity": "人物是否符合他们在书中的样子",
        "Storyline Quality": "对话是否连贯、作为故事是否推进得好",
    },
}


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
    return create_model(name, __config__=ConfigDict(extra="forbid", populate_by_name=True),
                        flaws_of=(FlawsReply, Field(alias=dimension)))


def critic_request(c: Circumstance, turns: Sequence[Message], dimension: str, role: str, model: str,
                   continue_from: int) -> Request[BaseModel]:
    system = prompts.render(
        "coser/critic", c.language, book=c.book, dimension=dimension, brief=BRIEF[c.language][dimension],
        continued_from=continue_from, plot_summary=c.plot_summary, scenario=c.scenario, major=c.major,
        profiles=c.profiles, original=original_text(original_lines(c.original)),
        criteria=prompts.render("coser/dimensions", c.language, dimension=dimension, major=c.major).text).text
    return Request(role, [{"role": "system", "content": system}, {"role": "user", "content": scene_text(turns)}],
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
    """Every dimension of every scene, sent together (the gateway holds the concurrency)."""
    requests = [critic_request(c, scene_messages(m), d, role, model, continue_from)
                for c, m in scenes for d in DIMENSIONS]
    results = await gateway.run_all(requests, roles=[role])
    out: list[Critique] = []
    for k, (c, m) in enumerate(scenes):
        out += critiques_of(c, m, model, results[k * len(DIMENSIONS):(k + 1) * len(DIMENSIONS)])
    return out
