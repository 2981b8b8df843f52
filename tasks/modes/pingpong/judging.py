"""PingPong's judge: one call per finished conversation, a verdict for every player turn, in PingPong's own words
(``run_judge.py``: its v2 judge templates, filled with the player's whole card and the conversation).

It explains before it scores, on the 1-5 agreement scale, and flags refusals. A reply without exactly one
verdict per turn, in order, is not a judgment: the gateway asks again, then records a failure. Nothing is ever
defaulted.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, create_model

from rpbench.tasks.core.records import Failure
from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.gather import OnDone
from rpbench.tasks.llm.structured import REASONING, StatedInPrompt
from rpbench.tasks.modes.pingpong import release
from rpbench.tasks.modes.pingpong.conversation import EXPLANATION_CAP, card_prompt, chat
from rpbench.tasks.modes.pingpong.records import Card, Turn, TurnJudgment

Likert = Literal[1, 2, 3, 4, 5]


def _explanation() -> Any:
    return Field(max_length=EXPLANATION_CAP, json_schema_extra=REASONING)


class TurnVerdict(StatedInPrompt):
    turn: int = Field(ge=1)
    is_refusal_explanation: str = _explanation()
    is_refusal: bool
    in_character_explanation: str = _explanation()
    in_character_score: Likert
    entertaining_explanation: str = _explanation()
    entertaining_score: Likert
    fluency_explanation: str = _explanation()
    fluency_score: Likert


class _Verdicts(StatedInPrompt):
    scores: Any


@functools.cache
def verdicts_schema(turns: int) -> type[_Verdicts]:
    """The judge's reply for a conversation of ``turns`` turns: exactly one verdict per turn, turn k in place k
    (each place's ``turn`` is a constant, so constrained decoding cannot misnumber them)."""
    places = tuple(create_model(f"Turn{k}Verdict", __base__=TurnVerdict, turn=(Literal[k], ...))  # type: ignore[arg-type]
                   for k in range(1, turns + 1))
    return create_model("PingPongVerdicts", __base__=_Verdicts, scores=(tuple[places], ...))  # type: ignore[valid-type]


def judge_request(card: Card, turns: Sequence[Turn], judge_role: str, tag: str) -> Request[Any]:
    # (run_judge.py also passes the situation's text, which the judge's template never shows.)
    text = release.render("templates/v2/judge_user.jinja", char_description=card_prompt(card),
                          messages=chat(turns))
    system = release.render("templates/v2/judge_system.jinja")
    return Request(judge_role, [{"role": "system", "content": system}, {"role": "user", "content": text}],
                   schema=verdicts_schema(len(turns)), tag=tag)


def complete_conversations(turns: Sequence[Turn]) -> dict[str, list[Turn]]:
    """Conversation id -> its turns, for the conversations whose every turn succeeded (the ones judged)."""
    by: dict[str, list[Turn]] = {}
    for t in turns:
        by.setdefault(t.conversation_id, []).append(t)
    return {cid: sorted(ts, key=lambda t: t.turn) for cid, ts in by.items() if all(t.status == "ok" for t in ts)}


async def judge_all(gateway: Model, cards: dict[tuple[str, str], Card], turns: Sequence[Turn], model: str,
                    judge: str, judge_role: str, on_done: OnDone = None) -> tuple[list[TurnJudgment], list[Failure]]:
    """``judge`` (bound to ``judge_role``) on every complete conversation of ``model``."""
    convos = complete_conversations([t for t in turns if t.model == model])
    ids = sorted(convos)
    requests = [judge_request(cards[(convos[c][0].language, convos[c][0].character)], convos[c], judge_role,
                              f"pingpong:{c}:{model}:judge:{judge}") for c in ids]
    results = await gateway.run_all(requests, on_done=on_done)
    made, failed = [], []
    for cid, res in zip(ids, results, strict=True):
        if not res.ok:
            failed.append(Failure(stage="pingpong-judgments", model=model, item_id=cid, kind=f"judgment:{judge}",
                                  error=res.error))
            continue
        made += [TurnJudgment(conversation_id=cid, model=model, judge=judge, **v.model_dump())
                 for v in res.parsed.scores]
    return made, failed
