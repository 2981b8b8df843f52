"""RPBench-Auto's records: an item of either subset as the release's data holds it, a judged round, and how a
dialogue ended."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rpbench.tasks.core.records import Record
from rpbench.tasks.llm.structured import StatedInPrompt
from rpbench.tasks.modes.rpbench_auto import release
from rpbench.tasks.reports.arena import Outcome


class Item(Record):
    """One character or scene, with the prompts the release fills from it."""

    subset: Literal["character", "scene"]
    item_id: str
    name: str  # the NPC's name, as the report groups it
    candidate_system: str  # TEMPLATE filled
    judge_system: str  # JUDGER_TEMPLATE filled
    greeting: str  # the NPC's first message: the conversation's first sentences, one per line


class JudgeTurn(StatedInPrompt):
    """The JSON the judge's prompt asks for. Read as ``extract_and_parse_json`` and ``chat_completion_judger``
    read it (``from_reply``), so ``winner`` holds whatever the judge said (null, "model_a", "model_b",
    or anything else, which names no winner); the schema below only holds a model decoding in process to a
    usable shape."""

    winner: Literal["model_a", "model_b"] | None
    next_round_user_speaks: str = Field(max_length=600)
    decision_reason: str = Field(default="", max_length=400)

    @classmethod
    def from_reply(cls, text: str) -> JudgeTurn:
        """A judge's reply as ``extract_and_parse_json`` and ``chat_completion_judger`` read it: the JSON of its
        fenced block if it has one, else the whole reply, mended by json_repair; usable when it holds "winner" and
        "next_round_user_speaks". rpbench also asks again for a reply whose JSON is not an object or whose user turn
        is not text (the release would fail on either later)."""
        import json_repair

        found = release.json_fence().search(text)
        try:
            parsed = json_repair.loads(found.group(1) if found else text)
        except Exception as exc:  # json_repair gives up on some input: unreadable, as in the release
            raise ValueError(f"the reply's JSON cannot be read ({type(exc).__name__})") from None
        if not isinstance(parsed, dict):
            raise ValueError("the reply holds no JSON object")
        missing = [k for k in ("winner", "next_round_user_speaks") if k not in parsed]
        if missing:
            raise ValueError(f"the reply's JSON has no {' and no '.join(missing)}")
        if not isinstance(parsed["next_round_user_speaks"], str):
            raise ValueError("next_round_user_speaks is not text")
        winner, reason = parsed["winner"], parsed.get("decision_reason")
        return cls.model_construct(winner=winner, next_round_user_speaks=parsed["next_round_user_speaks"],
                                 decision_reason=reason if isinstance(reason, str) else "")


class Round(Record):
    """One judged round of a candidate against the baseline: both replies to the same history, which slot
    each sat in (drawn), and the judge's verdict as it said it."""

    model: str  # the candidate (a system of the run)
    baseline: str
    subset: Literal["character", "scene"]
    language: str = "en"
    item_id: str
    dialogue_id: str  # <subset>:<item>: the rounds of one dialogue are resampled together
    name: str
    round: int  # from 1
    model_a: str  # the system in slot A this round
    model_b: str
    user: str  # what the judge, as the user, said before the replies
    reply_a: str
    reply_b: str
    judge_reply: str
    said_winner: str | None  # the judge's "winner" as it gave it
    outcome: Outcome
    reason: str | None = None
    win: float | None = None  # 1: the candidate won the round, 0: the baseline did, None: no winner named
    finished_a: bool | None = None  # scene: what each reply said of is_chat_finished (None: not read)
    finished_b: bool | None = None


class DialogueEnd(Record):
    """How one candidate's dialogue on one item ended: its rounds, and why it stopped early if it did."""

    model: str
    subset: Literal["character", "scene"]
    item_id: str
    rounds: int
    status: Literal["ok", "failed"]
    error: str | None = None
    ended_by_scene: bool = False  # the winner of a round said the scene is finished (scene subset)
    judge_asks: int = 0  # judge replies asked again because they could not be read
    unreadable_candidates: int = 0  # scene replies whose is_chat_finished could not be read (taken as false)
