"""Conversations between the interrogator (a user emulator) and the player (the model under test), in PingPong's
own words: its released templates, rendered as its scripts render them (``release.py``).

v2, the paper's main setup (``run_eval_v2.py``): the interrogator sees only the card's one-line summary and the
situation, speaks first on every turn; the player sees only its card (the character template, as the system
prompt) and the chat. No early stop: a conversation runs the situation's number of turns. Every reply is
stripped and its double spaces made single, as the release's ``generate`` does.

v1 (``run_eval_v1.py``): one combined tester sees the whole card, writes the next message and grades the player's
previous reply on 1-10 (the player's lines shown as "bot"); its first call grades nothing, and the conversation
stops at the first refusal.

A call that fails (after the gateway's retries) stops its conversation; the failed turn is kept with its error,
never filled in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from rpbench import prompts
from rpbench.tasks.llm import Model
from rpbench.tasks.llm.gather import OnDone, gather_counted
from rpbench.tasks.llm.messages import Message, merge_system
from rpbench.tasks.llm.structured import REASONING, StatedInPrompt
from rpbench.tasks.modes.pingpong import release
from rpbench.tasks.modes.pingpong.cards import conversation_id
from rpbench.tasks.modes.pingpong.records import Card, Grades, Situation, Turn, TurnJudgment

EXPLANATION_CAP = 4000


class NextUtterance(StatedInPrompt):
    next_utterance: str = Field(min_length=1)


class TesterTurn(StatedInPrompt):
    """v1: grades of the player's last reply (explanations first), then the next message: every field, every time,
    as the release's TesterOutput reads it (its first call's grades are not counted)."""

    next_user_utterance: str = Field(min_length=1)
    is_refusal_explanation: str = Field(max_length=EXPLANATION_CAP, json_schema_extra=REASONING)
    is_refusal: bool
    stay_in_character_explanation: str = Field(max_length=EXPLANATION_CAP, json_schema_extra=REASONING)
    stay_in_character_score: int = Field(ge=1, le=10)
    language_fluency_explanation: str = Field(max_length=EXPLANATION_CAP, json_schema_extra=REASONING)
    language_fluency_score: int = Field(ge=1, le=10)
    entertainment_explanation: str = Field(max_length=EXPLANATION_CAP, json_schema_extra=REASONING)
    entertainment_score: int = Field(ge=1, le=10)


@dataclass(frozen=True)
class ConversationConfig:
    version: Literal["v1", "v2"] = "v2"
    merge_system: bool = False  # the player has no system role: the card goes into the first user message
    symmetric: bool = False  # the interrogator sees the whole card too (the paper's suggested variant)


def card_prompt(card: Card) -> str:
    """The player's system prompt: the release's character template for the card's language filled with the card
    (the judges read the same text). A card in a language the release has no template for gets rpbench's own."""
    if release.has_character_template(card.language):
        character = {"char_name": card.name, "system_prompt": card.system_prompt,
                     "example_prompt": card.example_dialogue, "initial_message": card.greeting}
        return release.render(release.CHARACTER_TEMPLATES[card.language], character=character)
    return prompts.render("pingpong/player", card.language, name=card.name, system_prompt=card.system_prompt,
                          example_dialogue=card.example_dialogue, greeting=card.greeting).text


def as_released(reply: str) -> str:
    """A reply as the release's ``generate`` hands it on: stripped, double spaces made single."""
    return reply.strip().replace("  ", " ")


def chat(turns: Sequence[Turn], bot: str = "assistant") -> list[Message]:
    """The chat so far as the release's templates take it: the user's lines and the player's (``bot``)."""
    out: list[Message] = []
    for t in turns:
        out += [{"role": "user", "content": t.user}, {"role": bot, "content": t.player}]
    return out


def player_messages(card: Card, turns: Sequence[Turn], user: str, merge: bool) -> list[Message]:
    msgs: list[Message] = [{"role": "system", "content": card_prompt(card)}]
    for t in turns:
        msgs += [{"role": "user", "content": t.user}, {"role": "assistant", "content": t.player}]
    msgs.append({"role": "user", "content": user})
    return merge_system(msgs) if merge else msgs


def _turn(card: Card, situation: Situation, model: str, k: int, user: str | None, player: str | None,
          error: str | None = None, **extra: Any) -> Turn:
    return Turn(conversation_id=conversation_id(card, situation), model=model, language=card.language,
                character=card.name, situation_id=situation.situation_id, turn=k, user=user, player=player,
                status="failed" if error else "ok", error=error, **extra)


async def _player_reply(gateway: Model, role: str, card: Card, turns: list[Turn], user: str, merge: bool,
                        tag: str) -> tuple[str | None, str | None]:
    reply = await gateway.complete(role, player_messages(card, turns, user, merge), tag=tag)
    return (as_released(reply.text), None) if reply.ok else (None, f"player: {reply.error}")


def conversation_sample(model: str, cid: str, repeat: int = 0) -> int:
    """The sample index of one conversation's emulated-user calls: the same (player, situation, repeat) always
    draws the same opening (so a rerun is answered from the cache), and different ones draw their own, where a
    shared index would give every player the very same first message through the call cache."""
    digest = hashlib.sha256(f"{model}\n{cid}\n{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % 1_000_000 + 1  # 0 stays the index of ordinary calls


async def converse_v2(gateway: Model, card: Card, situation: Situation, role: str, model: str,
                      cfg: ConversationConfig) -> list[Turn]:
    turns: list[Turn] = []
    cid = conversation_id(card, situation)
    system = release.render("templates/v2/interrogator_system.jinja")
    for k in range(1, situation.num_turns + 1):
        # The symmetric variant (the paper's suggestion) shows the interrogator the whole card for its summary.
        text = release.render("templates/v2/interrogator_user.jinja",
                              char_summary=card_prompt(card) if cfg.symmetric else card.summary,
                              situation=situation.text, messages=chat(turns))
        asked = await gateway.complete("interrogator", [{"role": "system", "content": system},
                                                        {"role": "user", "content": text}], schema=NextUtterance,
                                       sample_index=conversation_sample(model, cid),
                                       tag=f"pingpong:{cid}:{model}:turn{k}:interrogator")
        if not asked.ok:
            turns.append(_turn(card, situation, model, k, None, None, f"interrogator: {asked.error}"))
            break
        user = as_released(asked.parsed.next_utterance)
        player, error = await _player_reply(gateway, role, card, turns, user, cfg.merge_system,
                                            f"pingpong:{cid}:{model}:turn{k}:player")
        turns.append(_turn(card, situation, model, k, user, player, error))
        if error:
            break
    return turns


async def converse_v1(gateway: Model, card: Card, situation: Situation, role: str, model: str,
                      cfg: ConversationConfig) -> list[Turn]:
    """The combined tester: each call grades the previous reply and writes the next message."""
    turns: list[Turn] = []
    cid = conversation_id(card, situation)
    system = release.render("templates/v1/system.jinja")
    for k in range(1, situation.num_turns + 2):
        text = release.render("templates/v1/user.jinja", char_description=card_prompt(card),
                              situation=situation.text, messages=chat(turns, bot="bot"))
        out = await gateway.complete("tester", [{"role": "system", "content": system},
                                                {"role": "user", "content": text}], schema=TesterTurn,
                                     sample_index=conversation_sample(model, cid),
                                     tag=f"pingpong:{cid}:{model}:turn{k}:tester")
        if not out.ok:
            # The last grades are missing: the conversation is not complete, so it is not scored.
            turns.append(_turn(card, situation, model, k, None, None, f"tester: {out.error}"))
            break
        graded: Any = out.parsed
        if turns:
            turns[-1] = turns[-1].model_copy(update={"tester": Grades(
                is_refusal_explanation=graded.is_refusal_explanation, is_refusal=graded.is_refusal,
                in_character_explanation=graded.stay_in_character_explanation,
                in_character_score=graded.stay_in_character_score,
                entertaining_explanation=graded.entertainment_explanation,
                entertaining_score=graded.entertainment_score,
                fluency_explanation=graded.language_fluency_explanation,
                fluency_score=graded.language_fluency_score)})
            if graded.is_refusal or k == situation.num_turns + 1:
                break
        user = str(graded.next_user_utterance)
        player, error = await _player_reply(gateway, role, card, turns, user, cfg.merge_system,
                                            f"pingpong:{cid}:{model}:turn{k}:player")
        turns.append(_turn(card, situation, model, k, user, player, error))
        if error:
            break
    return turns


async def converse_all(gateway: Model, grid: Sequence[tuple[Card, Situation]], role: str, model: str,
                       cfg: ConversationConfig, on_done: OnDone = None) -> list[Turn]:
    """Every conversation of the grid, side by side (each one's turns in order), rows in grid order."""
    run = converse_v1 if cfg.version == "v1" else converse_v2
    made = await gather_counted([run(gateway, c, s, role, model, cfg) for c, s in grid], on_done)
    return [t for turns in made for t in turns]


def tester_judgments(turns: Sequence[Turn], judge: str) -> list[TurnJudgment]:
    """v1's grades as judgments by the tester, on its 1-10 scale."""
    return [TurnJudgment(conversation_id=t.conversation_id, model=t.model, judge=judge, turn=t.turn,
                         **t.tester.model_dump())
            for t in turns if t.status == "ok" and t.tester is not None]
