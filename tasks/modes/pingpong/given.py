"""Conversations a user already has, judged as a player's: JSONL of ``{"id": conversation id, "turns":
[{"user": ..., "player": ...}, ...]}``, the id as PingPong's tables write it (``<language>/<character>/
<situation>``). Each player message is read as a live reply is (an empty one fails the turn, and the
conversation stops there, as a live one does)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from rpbench.tasks.llm.given import given_reply, read_exchanges
from rpbench.tasks.modes.pingpong.cards import conversation_id
from rpbench.tasks.modes.pingpong.records import Card, Situation, Turn

Exchange = tuple[str, str]


def read_conversations(path: str | Path, known: Collection[str]) -> dict[str, list[Exchange]]:
    """id -> its (user, player) messages; a bad line, field or unknown id is one InputError naming them."""
    return read_exchanges(path, known, "conversations", "turns", ("user", "player"), "language/character/situation")


def given_turns(grid: Sequence[tuple[Card, Situation]], given: dict[str, list[Exchange]], name: str,
                source: str) -> list[Turn]:
    """The grid's conversations as ``name``'s turns, from ``given``; one with no conversation there fails."""
    out: list[Turn] = []
    for card, situation in grid:
        cid = conversation_id(card, situation)
        common: dict[str, Any] = {"conversation_id": cid, "model": name, "language": card.language,
                                  "character": card.name, "situation_id": situation.situation_id}
        exchanges = given.get(cid)
        if exchanges is None:
            out.append(Turn(**common, turn=1, user=None, player=None, status="failed",
                            error=f"player: {source} has no conversation {cid}"))
            continue
        for k, (user, player) in enumerate(exchanges[: situation.num_turns], 1):
            reply = given_reply(player, name)
            out.append(Turn(**common, turn=k, user=user, player=reply.text if reply.ok else None,
                            status="ok" if reply.ok else "failed",
                            error=None if reply.ok else f"player: {reply.error}"))
            if not reply.ok:
                break
    return out
