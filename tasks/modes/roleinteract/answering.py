"""Asking a model RoleInteract's questions: one prompt per item (SocialBench's own, by its category and language,
read from the release), one reply.

Multiple-choice replies are read for option letters; a reply with none is shown back to the model with what
is missing, as many times as the retry policy allows, and then recorded as unreadable with its text (the
scoring policy decides whether it is skipped or counts as wrong; it is counted either way). Memory replies
are kept as text. A call that fails outright, or whose replies were empty, is a failure with its reason,
never an answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, overload

from rpbench.tasks.choices.letters import option_letters
from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.gather import OnDone
from rpbench.tasks.llm.given import given_reply
from rpbench.tasks.llm.requests import CallResult
from rpbench.tasks.modes.roleinteract import release
from rpbench.tasks.modes.roleinteract.catalog import GROUP, MEMORY
from rpbench.tasks.modes.roleinteract.records import Answer, Item

EMOTION = "Individual-EP-DialogueEmotionDetect"
HUMOUR = "Individual-EP-HumorSarcasmDetect"

def _conversations(item: Item) -> str:
    return "".join(f"{u.speaker}: {u.text}\n" for u in item.dialogue)


def _options(item: Item) -> str:
    return "".join(f"{c.letter}. {c.text}\n" for c in item.choices)


def _own_profile(item: Item) -> str:
    mine = next((p for p in item.profiles if p.name == item.target), item.profiles[0] if item.profiles else None)
    return mine.text if mine else ""


def _group_profiles(item: Item) -> str:
    """Every member's profile cut to its first lines (blank lines closed up), as make_group_profiles cuts it."""
    keep = release.group_profile_lines()
    return "\n\n\n".join("\n".join(re.sub(r"\n+", "\n", p.text).split("\n")[:keep]) for p in item.profiles)


def prompt_text(item: Item, with_instruction: bool = False) -> str:
    """The item as one user message, as SocialBench's ``format_prompt`` lays it out: by category, the release's
    prompt for it filled with the conversation (``speaker: text`` lines), the options (``X. text`` lines), the
    role's profile (a group's, each cut short) and name; situation and humour items are the conversation and the
    options alone. Texts go as the file holds them. ``with_instruction`` (rpbench's option: the release never sends
    an item's instruction) puts the item's instruction before its options (after the conversation where there
    are none)."""
    conversations, options = _conversations(item), _options(item)
    if with_instruction and item.instruction:
        if item.choices:
            options = f"{item.instruction}\n{options}"
        else:
            conversations += f"{item.instruction}\n"
    values = {"conversations": conversations, "options": options, "role_name": item.target or "",
              "role_profile": _own_profile(item)}
    if item.column in MEMORY:
        return release.prompt("_OPEN", item.language).format_map(values)
    if item.category == EMOTION:
        return release.prompt("_DIALOGUE_EMOTION", item.language).format_map(
            {**values, "utterance": item.dialogue[-1].text if item.dialogue else ""})
    if item.column == "EP Situ." or item.category == HUMOUR:
        return f"{conversations}\n{options}"
    if item.column in GROUP:
        return release.prompt("_GROUP", item.language).format_map({**values, "role_profiles": _group_profiles(item)})
    return release.prompt("", item.language).format_map(values)


def letter_reader(item: Item) -> Any:
    options = {c.letter: c.text for c in item.choices}

    def read(reply: str) -> list[str]:
        found = option_letters(reply, options)
        if not found:
            raise ValueError(f"no option letter ({', '.join(options)}) could be read in the reply; answer with the "
                             "letter of your choice")
        return found

    return read


def request(item: Item, role: str, model: str, attempts: int | None = None,
            with_instruction: bool = False) -> Request[Any]:
    return Request(role, [{"role": "user", "content": prompt_text(item, with_instruction)}],
                   tag=f"roleinteract:{item.item_id}:{model}", parse=letter_reader(item) if item.choices else None,
                   attempts=attempts)


class _Requests(Sequence[Request[Any]]):
    """Each item's request, made as the gateway reads it: a stage of 100,000 items holds the prompts in
    flight, not every prompt at once."""

    def __init__(self, items: Sequence[Item], role: str, model: str, attempts: int | None,
                 with_instruction: bool) -> None:
        self.items, self.role, self.model = items, role, model
        self.attempts, self.with_instruction = attempts, with_instruction

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> Request[Any]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Request[Any]]: ...

    def __getitem__(self, index: int | slice) -> Request[Any] | Sequence[Request[Any]]:
        if isinstance(index, slice):
            return _Requests(self.items[index], self.role, self.model, self.attempts, self.with_instruction)
        return request(self.items[index], self.role, self.model, self.attempts, self.with_instruction)


async def answer_all(gateway: Model, items: Sequence[Item], role: str, model: str, on_done: OnDone = None,
                     attempts: int | None = None, with_instruction: bool = False) -> list[Answer]:
    """``model`` (bound to ``role``) on every item, each asked at most ``attempts`` times (None: the retry
    policy's); answers in item order."""
    results = await gateway.run_all(_Requests(items, role, model, attempts, with_instruction), on_done=on_done,
                                    roles=[role])
    return answers_of(items, results, model)


def given_answers(items: Sequence[Item], texts: Mapping[str, str], model: str, source: str) -> list[Answer]:
    """A file's answers (item id -> text) read as ``model``'s replies, exactly as live ones are read."""
    results = [given_reply(texts.get(i.item_id), model, parse=letter_reader(i) if i.choices else None,
                           missing=f"{source} has no answer for this item") for i in items]
    return answers_of(items, results, model)


def answers_of(items: Sequence[Item], results: Sequence[CallResult[Any]], model: str) -> list[Answer]:
    out = []
    for item, res in zip(items, results, strict=True):
        if res.ok:
            out.append(Answer(item_id=item.item_id, model=model, text=res.text,
                              letters=res.parsed if item.choices else None, status="ok"))
        elif res.raw_replies and len(res.raw_replies) == res.attempts and all(t.strip() for t in res.raw_replies):
            # It answered every time, unreadably: the model's own answer. An empty reply is no answer at all.
            out.append(Answer(item_id=item.item_id, model=model, text=res.text, letters=[] if item.choices else None,
                              status="unparsed", error=res.error))
        else:
            out.append(Answer(item_id=item.item_id, model=model, text=None, letters=None, status="failed",
                              error=res.error))
    return out
