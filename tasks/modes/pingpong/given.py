"""Conversations a user already has, judged as a player's: JSONL of ``{"id": conversation id, "turns":
[{"user": ..., "player": ...}, ...]}``, the id as PingPong's tables write it (``<language>/<character>/
<situation>``). Each player message is read as a live reply is (an empty one fails the turn, and the
conversation stops there, as a live one does)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import orjson

from rpbench.storage.user_files import read_user_text
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm.given import given_reply
from rpbench.tasks.modes.pingpong.cards import conversation_id
from rpbench.tasks.modes.pingpong.records import Card, Situation, Turn

Exchange = tuple[str, str]


def read_conversations(path: str | Path, known: Collection[str]) -> dict[str, list[Exchange]]:
    """id -> its (user, player) messages; a bad line, field or unknown id is one InputError naming them."""
    out: dict[str, list[Exchange]] = {}
    for n, line in enumerate(read_user_text(Path(path), "a file of conversations").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}: line {n}"
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise InputError(f"{where}: not JSON ({exc})") from None
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            raise InputError(f"{where}: field 'id': missing (the conversation's id, language/character/situation)")
        if record["id"] not in known:
            raise InputError(f"{where}: field 'id': '{record['id']}' is no conversation of the settings given")
        turns = record.get("turns")
        if not isinstance(turns, list) or not turns:
            raise InputError(f"{where}: field 'turns': expected a list of {{user, player}}")
        exchanges = []
        for k, t in enumerate(turns):
            if not isinstance(t, dict) or not all(isinstance(t.get(f), str) for f in ("user", "player")):
                raise InputError(f"{where}: field 'turns.{k}': expected user and player as text")
            exchanges.append((t["user"], t["player"]))
        if record["id"] in out:
            raise InputError(f"{where}: field 'id': '{record['id']}' appears more than once")
        out[record["id"]] = exchanges
    if not out:
        raise InputError(f"{path}: no conversations in the file")
    return out


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
