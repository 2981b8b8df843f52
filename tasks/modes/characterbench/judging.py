"""The judge scores a reply on its item's dimension, from the input process_wo_context_*_all.py builds: the turns
before the user's last labelled by position (even the user, odd the character, whoever spoke, as the release
does), the user's last turn, the reply under the character's name, the dimension's reference. CharacterJudge
answers with a bare number (``number``), another judge with JSON (``json``); a reply with no score on the
dimension's scale is asked again, then a counted failure (the release's scorer takes 3.0)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from rpbench import prompts
from rpbench.tasks.llm.gather import OnDone
from rpbench.tasks.llm.requests import Model, Request
from rpbench.tasks.llm.structured import REASONING, score_alone
from rpbench.tasks.modes.characterbench.dimensions import DIMENSIONS
from rpbench.tasks.modes.characterbench.records import Item, Judgment, Reply

Output = Literal["number", "json"]
SYSTEM = "You are a helpful assistant."  # CharacterJudge's system prompt


def judge_input(item: Item, reply: str, output: Output) -> str:
    dim = DIMENSIONS[item.dimension]
    before = item.dialogue[:-1] if dim.dialogue else []
    user = "用户" if item.language == "zh" else "User"  # the release's label of the user's turns
    dialogue = "".join(f"{user if n % 2 == 0 else item.character}：{t.text}\n" for n, t in enumerate(before))
    criteria = prompts.render("characterbench/criteria", item.language, dimension=dim.name).text
    return prompts.render("characterbench/judge", item.language, top=dim.top, criteria=criteria,
                          profile=item.profile, dialogue=dialogue.strip(), query=f"{user}：{item.dialogue[-1].text}",
                          reply=f"{item.character}：{reply}", reference=item.reference, output=output).text


@functools.lru_cache(maxsize=8)
def verdict(top: int) -> type[BaseModel]:
    """The JSON a judge other than CharacterJudge answers with, its score bounded by the dimension's scale."""
    return create_model(f"Verdict{top}", reasoning=(str, Field(json_schema_extra=REASONING)),
                        score=(int, Field(ge=1, le=top)))


def request(item: Item, reply: Reply, role: str, output: Output) -> Request[Any]:
    assert reply.text is not None
    top = DIMENSIONS[item.dimension].top
    return Request(role, [{"role": "system", "content": SYSTEM},
                          {"role": "user", "content": judge_input(item, reply.text, output)}],
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
