"""The judge scores a reply on its item's dimension, from the input process_wo_context_<lang>_all.py builds:
the dimension's judge prompt from the release, filled with the profile, the turns before the user's last labelled
by position (even the user, odd the character, whoever spoke, as the release does; left out where the release
leaves them out), the user's last turn, the reply under the character's name and the dimension's reference; asked
with CharacterJudge's system prompt. CharacterJudge answers with a bare number (``number``: the input is the
release's, character for character); another judge with JSON (``json``: the kit's structured-output request is
added to it). A reply with no score on the dimension's scale (the one its prompt states) is asked again, then a
counted failure (the release's scorer takes 3.0)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from rpbench.prompts.python_text import ReleaseLayoutError
from rpbench.tasks.llm.gather import OnDone
from rpbench.tasks.llm.requests import Model, Request
from rpbench.tasks.llm.structured import REASONING, score_alone
from rpbench.tasks.modes.characterbench import release
from rpbench.tasks.modes.characterbench.dimensions import DIMENSIONS
from rpbench.tasks.modes.characterbench.records import Item, Judgment, Reply

Output = Literal["number", "json"]
# The names the release's prompts give the dimension's reference (the zh and en prompts differ): each is given it.
REFERENCE_HOLES = ("reference", "reference_dialogue", "answer", "behavior_style", "reference_response", "emotion")


def user_label(language: str) -> str:
    """How the release labels the user's turns in a judge's input."""
    return "用户" if language == "zh" else "User"


def judge_input(item: Item, reply: str) -> str:
    dim = DIMENSIONS[item.dimension]
    user = user_label(item.language)
    before = item.dialogue[:-1] if dim.dialogue else []
    values = {
        # behavior_consistency_human: the style is added to the profile, as the release adds it (no separator).
        "character_profile": item.profile + (item.reference or "" if dim.name == "behavior_consistency_human"
                                             else ""),
        "dialogue": "".join(f"{user if n % 2 == 0 else item.character}：{t.text}\n" for n, t in enumerate(before)),
        "user_query": f"{user}：{item.dialogue[-1].text}",
        "character_response": f"{item.character}：{reply}",
        **({name: item.reference for name in REFERENCE_HOLES} if item.reference is not None else {}),
    }
    prompt = release.judge_prompt(dim.name, item.language)
    missing = sorted(release.holes(prompt) - set(values))
    if missing:
        raise ReleaseLayoutError(
            f"{release.RELEASE.name}: {dim.name}'s {item.language} judge prompt asks for {missing}, which rpbench "
            "does not fill")
    return prompt.format_map(values)


@functools.lru_cache(maxsize=8)
def verdict(top: int) -> type[BaseModel]:
    """The JSON a judge other than CharacterJudge answers with, its score bounded by the dimension's scale."""
    return create_model(f"Verdict{top}", reasoning=(str, Field(json_schema_extra=REASONING)),
                        score=(int, Field(ge=1, le=top)))


def request(item: Item, reply: Reply, role: str, output: Output) -> Request[Any]:
    assert reply.text is not None
    top = DIMENSIONS[item.dimension].top(item.language)
    return Request(role, [{"role": "system", "content": release.judge_system()},
                          {"role": "user", "content": judge_input(item, reply.text)}],
                   schema=verdict(top) if output == "json" else None,
                   parse=score_alone(1, top) if output == "number" else None,
                   tag=f"characterbench-judge:{item.item_id}:{item.language}:{reply.model}")


async def judge_all(gateway: Model, items: Sequence[Item], replies: Sequence[Reply], role: str, output: Output,
                    on_done: OnDone = None) -> list[Judgment]:
    """The judge on every reply that was made (a failed one has nothing to judge: it stays a failure)."""
    by_key = {(i.item_id, i.language): i for i in items}
    made = [r for r in replies if r.status == "ok"]
    results = await gateway.run_all([request(by_key[(r.item_id, r.language)], r, role, output) for r in made],
                                    on_done=on_done, roles=[role])
    return [Judgment(item_id=r.item_id, language=r.language, model=r.model, judge=res.model, status=res.status,
                     score=None if not res.ok else res.parsed if isinstance(res.parsed, float) else res.parsed.score,
                     text=(None if isinstance(res.parsed, float) else res.parsed.reasoning) if res.ok else res.text,
                     error=res.error) for r, res in zip(made, results, strict=True)]
