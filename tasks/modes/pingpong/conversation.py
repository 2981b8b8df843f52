"""Conversations between the interrogator (a user emulator) and the player (the model under test).

v2, the paper's main setup: the interrogator sees only the card's one-line
summary and the situation, speaks first on every turn and writes in the
situation's language; the player sees only its card (as the system prompt) and
the chat. No early stop: a conversation runs the situation's number of turns.

v1: one combined tester sees the whole card, writes the next message and grades
the player's previous reply on 1-10; its first call grades nothing, and the
conversation stops at the first refusal.

A call that fails (after the gateway's retries) stops its conversation; the
failed turn is kept with its error, never filled in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from rpbench import prompts
from rpbench.tasks.core.languages import language_name
from rpbench.tasks.llm import Model
from rpbench.tasks.llm.gather import OnDone, gather_counted
from rpbench.tasks.llm.messages import Message, merge_system
from rpbench.tasks.llm.structured import REASONING
from rpbench.tasks.modes.pingpong.cards import conversation_id
from rpbench.tasks.modes.pingpong.records import Card, Grades, Situation, Turn, TurnJudgment

EXPLANATION_CAP = 4000


class NextUtterance(BaseModel):
    next_utterance: str = Field(min_length=1)


class TesterOpening(BaseModel):
    next_user_utterance: str = Field(min_length=1)


class TesterTurn(BaseModel):
    """v1: grades of the player's last reply (explanations first), then the next message."""

    is_refusal_explanation: str = Field(max_length=EXPLANATION_CAP, json_schema_extra=REASONING)
    is_refusal: bool
    stay_in_character_explanation: str = Field(max_length=EXPLANATION_CAP, json_schema_extra=REASONING)
    stay_in_character_score: int = Field(ge=1, le=10)
    language_fluency_explanation: str = Field(max_length=EXPLANATION_CAP, json_schema_extra=REASONING)
    language_fluency_score: int = Field(ge=1, le=10)
    entertainment_explanation: str = Field(max_length=EXPLANATION_CAP, json_schema_extra=REASONING)
    entertainment_score: int = Field(ge=1, le=10)
    next_user_utterance: str = Field(min_length=1)


@dataclass(frozen=True)
class ConversationConfig:
    version: Literal["v1", "v2"] = "v2"
    merge_system: bool = False  # the player has no system role: the card goes into the first user message
    symmetric: bool = False  # the interrogator sees the whole card too (the paper's suggested variant)


def card_prompt(card: Card) -> str:
    """The player's system prompt: the card and nothing else (the judges read the same text)."""
    return prompts.render("pingpong/player", card.language, name=card.name, system_prompt=card.system_prompt,
                          example_dialogue=card.example_dialogue, greeting=card.greeting).text


def transcript(turns: Sequence[Turn]) -> list[Message]:
    """The chat so far as the interrogator and judges read it: "user" and "player"."""
    out: list[Message] = []
    for t in turns:
        out += [{"role": "user", "content": t.user}, {"role": "player", "content": t.player}]
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
    return (reply.text, None) if reply.ok else (None, f"player: {reply.error}")


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
    for k in range(1, situation.num_turns + 1):
        text = prompts.render("pingpong/interrogator", "en", summary=card.summary, situation=situation.text,
                              language_name=language_name(situation.language), history=transcript(turns),
                              card=card_prompt(card) if cfg.symmetric else None).text
        system = prompts.render("pingpong/interrogator_system", "en").text
        asked = await gateway.complete("interrogator", [{"role": "system", "content": system},
                                                        {"role": "user", "content": text}], schema=NextUtterance,
                                       sample_index=conversation_sample(model, cid),
                                       tag=f"pingpong:{cid}:{model}:turn{k}:interrogator")
        if not asked.ok:
            turns.append(_turn(card, situation, model, k, None, None, f"interrogator: {asked.error}"))
            break
        user = asked.parsed.next_utterance
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
    for k in range(1, situation.num_turns + 2):
        text = prompts.render("pingpong/tester", "en", card=card_prompt(card), situation=situation.text,
                              language_name=language_name(situation.language), history=transcript(turns)).text
        schema: type[BaseModel] = TesterTurn if turns else TesterOpening
        out = await gateway.complete("tester", [{"role": "user", "content": text}], schema=schema,
                                     sample_index=conversation_sample(model, cid),
                                     tag=f"pingpong:{cid}:{model}:turn{k}:tester")
        if not out.ok:
            # The last grades are missing: the conversation is not complete, so it is not scored.
            turns.append(_turn(card, situation, model, k, None, None, f"tester: {out.error}"))
            break
        if turns:
            graded: Any = out.parsed
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
        parsed: Any = out.parsed
        user = str(parsed.next_user_utterance)
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
