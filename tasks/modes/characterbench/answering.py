"""The model under test answers an item in character as process.py asks: both profiles, the dialogue as ``user:``
and ``assistant:`` lines; a short reply, actions in parentheses, as JSON ``{"response": ...}``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from rpbench import prompts
from rpbench.tasks.llm.gather import OnDone
from rpbench.tasks.llm.requests import CallResult, Model, Request
from rpbench.tasks.modes.characterbench.records import Item, Reply


class ActorReply(BaseModel):
    """The JSON the release asks the model under test for."""

    response: str = Field(min_length=1)


def dialogue_lines(item: Item) -> str:
    """The release's layout: the greeting as the character's opening turn, after an empty user turn when the
    dialogue would otherwise open with the character."""
    turns = [("user" if t.speaker == "user" else "assistant", t.text) for t in item.dialogue]
    if item.greeting:
        turns.insert(0, ("assistant", item.greeting))
    if turns[0][0] == "assistant":
        turns.insert(0, ("user", ""))
    return "\n".join(f"{who}: {text}" for who, text in turns)


def request(item: Item, role: str, model: str) -> Request[Any]:
    text = prompts.render("characterbench/actor", item.language, profile=item.profile,
                          user_profile=item.user_profile, dialogue=dialogue_lines(item)).text
    return Request(role, [{"role": "user", "content": text}], schema=ActorReply,
                   tag=f"characterbench:{item.item_id}:{item.language}:{model}")


def replies_of(items: Sequence[Item], results: Sequence[CallResult[Any]], model: str) -> list[Reply]:
    # A live reply is the JSON's response; a given one (no JSON asked of a file) is its text.
    return [Reply(item_id=i.item_id, language=i.language, model=model, status="ok",
                  text=r.text if r.parsed is None else r.parsed.response) if r.ok else
            Reply(item_id=i.item_id, language=i.language, model=model, text=r.text, status="failed", error=r.error)
            for i, r in zip(items, results, strict=True)]


async def answer_all(gateway: Model, items: Sequence[Item], role: str, model: str, on_done: OnDone = None
                     ) -> list[Reply]:
    results = await gateway.run_all([request(i, role, model) for i in items], on_done=on_done, roles=[role])
    return replies_of(items, results, model)


def released_replies(items: Sequence[Item]) -> list[Reply]:
    """The files' own replies, each under its system's name; an item with no reply in its language is a
    counted failure (the release's English script leaves such items out)."""
    return [Reply(item_id=i.item_id, language=i.language, model=i.reply_model or "unnamed", text=i.reply,
                  status="ok" if i.reply else "failed",
                  error=None if i.reply else f"the release has no {i.language} reply for this item")
            for i in items]
