"""How a model under test is asked a RoleBench question: as OpenCompass asks it (``opencompass``, the default: the
prompting RoleLLM's authors point to, in OpenCompass's own words, read from its pinned configuration), or by
RoleGPT prompting in rpbench's words, a role's description as the system prompt and its own dialogue as examples.

RoleGPT's three modes, as RoleLLM compares them:
- ``zsp`` (zero-shot): the system prompt, then the question as it stands (as OpenCompass's RoleBench
  configuration, which RoleLLM's authors point to, asks a model under test);
- ``fsp`` (few-shot in the prompt): the retrieved examples written out in the user message before the question;
- ``fsd`` (few-shot as dialogue): each retrieved example as a real user turn and assistant turn, then the
  question (RoleLLM's choice: chat models follow a dialogue history better than examples in one message).
Examples are the role's own dialogue rounds (what was said to it, its reply), retrieved with BM25 with the
question as the query, top 5 by default, from that role's script only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rpbench import prompts
from rpbench.tasks.llm.messages import Message
from rpbench.tasks.modes.rolellm import release
from rpbench.tasks.modes.rolellm.profiles import Pair, pairs
from rpbench.tasks.modes.rolellm.records import Mode, RoleProfile
from rpbench.tasks.stats.similarity import BM25Index

TOP_K = 5
USER_NAME = {"en": "User", "zh": "用户"}


@dataclass
class Retriever:
    """Per role, a BM25 index over its dialogue rounds (built on first use)."""

    profiles: Mapping[str, RoleProfile]
    _indexes: dict[str, tuple[list[Pair], BM25Index]] = field(default_factory=dict)

    def examples(self, role: str, question: str, k: int = TOP_K) -> list[Pair]:
        if role not in self._indexes:
            found = pairs(self.profiles[role])
            self._indexes[role] = (found, BM25Index([f"{p.question}\n{p.answer}" for p in found]))
        found, index = self._indexes[role]
        return [found[i] for i in index.top(question, k)] if found else []


def messages(profile: RoleProfile, question: str, mode: Mode, retriever: Retriever, k: int = TOP_K,
             language: str | None = None, split: str = "") -> list[Message]:
    """The chat a model under test is sent for ``question``: OpenCompass's one user message (``opencompass``, its
    words read from its configuration for the row's ``split``), or RoleGPT's ``mode`` in rpbench's words."""
    lang = language or profile.language
    if mode == "opencompass":
        return [{"role": "user", "content": release.user_message(split, lang, profile.name, profile.description,
                                                                 question)}]
    system = prompts.render("rolellm/system", lang, name=profile.name, description=profile.description).text
    user_name = USER_NAME.get(lang, "User")
    out: list[Message] = [{"role": "system", "content": system}]
    shots = retriever.examples(profile.name, question, k) if mode != "zsp" else []
    if mode == "fsp" and shots:
        out.append({"role": "user", "content": prompts.render("rolellm/examples", lang, pairs=shots, name=profile.name,
                                                              user_name=user_name, question=question).text})
        return out
    if mode == "zsp":
        return [*out, {"role": "user", "content": question}]
    for p in shots:
        out += [{"role": "user", "content": p.question}, {"role": "assistant", "content": p.answer}]
    out.append({"role": "user", "content": prompts.render("rolellm/question", lang, user_name=user_name,
                                                          question=question).text})
    return out
