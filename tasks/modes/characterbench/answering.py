"""The model under test answers an item in character as process.py asks: the release's reply prompt
(``roleplay_prompt.py``) with both profiles and the dialogue as ``user:`` and ``assistant:`` lines, sent alone as
one user message; the reply read as process.py reads it (the object's response, with the replacements process.py
makes in the reply's text)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from rpbench.tasks.llm.gather import OnDone
from rpbench.tasks.llm.requests import CallResult, Model, Request
from rpbench.tasks.llm.structured import StatedInPrompt
from rpbench.tasks.modes.characterbench import release
from rpbench.tasks.modes.characterbench.records import Item, Reply


def dialogue_lines(item: Item) -> str:
    """The release's layout: the greeting as the character's opening turn, after an empty user turn when the
    dialogue would otherwise open with the character."""
    turns = [("user" if t.speaker == "user" else "assistant", t.text) for t in item.dialogue]
    if item.greeting:
        turns.insert(0, ("assistant", item.greeting))
    if turns[0][0] == "assistant":
        turns.insert(0, ("user", ""))
    return "\n".join(f"{who}: {text}" for who, text in turns)


def prompt(item: Item) -> str:
    user_profile = item.user_profile if item.user_profile is not None else release.user_profile_default(
        item.language)
    return release.reply_prompt(item.language).format(character_profile=item.profile, user_profile=user_profile,
                                                      dialogue=dialogue_lines(item))


class ActorReply(StatedInPrompt):
    """The object the release's prompt asks the reply under (its prompt shows it: nothing is added)."""

    response: str = Field(min_length=1)


def as_read(response: str) -> str:
    """The reply as process.py hands it on: the replacements it makes in the model's text before reading the
    object it holds (read from its code), which reach the reply itself: a Chinese comma becomes ","."""
    for old, new in release.reply_cleaning():
        response = response.replace(old, new)
    return response


def request(item: Item, role: str, model: str) -> Request[Any]:
    return Request(role, [{"role": "user", "content": prompt(item)}], schema=ActorReply,
                   tag=f"characterbench:{item.item_id}:{item.language}:{model}")


def replies_of(items: Sequence[Item], results: Sequence[CallResult[Any]], model: str) -> list[Reply]:
    # A live reply is the object's response, as process.py reads it; a given one (no JSON asked of a file) is
    # its text.
    return [Reply(item_id=i.item_id, language=i.language, model=model, status="ok",
                  text=r.text if r.parsed is None else as_read(r.parsed.response)) if r.ok else
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
