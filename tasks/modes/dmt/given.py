"""Dialogues a user already has, labelled as a model's: JSONL of ``{"id": dialogue id, "rounds": [{"query":
..., "response": ...}, ...]}``, the id as DMT's tables write it (``<seed id>/<prompt format>``). Each response
is read as a live reply is: an empty one fails the dialogue there, as a live one does."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from rpbench.tasks.llm.given import given_reply, read_exchanges
from rpbench.tasks.modes.dmt.dialogue import Dialogue
from rpbench.tasks.modes.dmt.records import TESTED_MODEL_FAILED, DialogueEnd, Round, Seed
from rpbench.tasks.modes.dmt.seeds import dialogue_id

GIVEN_END = "given"  # how a dialogue read from a file ends (its length is the file's)


def read_dialogues(path: str | Path, known: Collection[str]) -> dict[str, list[tuple[str, str]]]:
    """id -> its (query, response) rounds; a bad line, field or unknown id is one InputError naming them."""
    return read_exchanges(path, known, "dialogues", "rounds", ("query", "response"), "seed id/prompt format")


def given_dialogues(picked: Sequence[tuple[Seed, str]], given: dict[str, list[tuple[str, str]]], model: str,
                    max_rounds: int, source: str) -> list[Dialogue]:
    """The picked dialogues as ``model``'s, from ``given``; one the file lacks is a failed dialogue."""
    out = []
    for seed, fmt in picked:
        did = dialogue_id(seed, fmt)
        rounds: list[Round] = []
        reason = GIVEN_END
        pairs = given.get(did)
        if pairs is None:
            reason = f"{TESTED_MODEL_FAILED}: {source} has no dialogue {did}"
            pairs = []
        for k, (query, response) in enumerate(pairs[:max_rounds], 1):
            reply = given_reply(response, model)
            rounds.append(Round(dialogue_id=did, seed_id=seed.id, model=model, prompt_format=fmt, round=k,
                                sub_topic=None, sub_intent=None, query=query, query_attempts=0,
                                response=reply.text if reply.ok else None, status=reply.status,
                                error=None if reply.ok else f"tested model: {reply.error}"))
            if not reply.ok:
                reason = TESTED_MODEL_FAILED
                break
        out.append(Dialogue(rounds, [], DialogueEnd(dialogue_id=did, seed_id=seed.id, model=model,
                                                    rounds=len(rounds), reason=reason)))
    return out
