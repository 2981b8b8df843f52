"""RoleLLM's ranking judge: a judge ranks several systems' answers to one question, shown anonymised and in a
shuffled order (seeded by the question, so a rerun shows the same order); win rates against a reference
system, the share of questions each system was ranked first on, and its mean rank.

A verdict must rank every answer exactly once, from 1 to n; anything else is asked again and then recorded
as a failure, never completed by guessing.
"""

from __future__ import annotations

import functools
import hashlib
import random
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, create_model, model_validator

from rpbench import prompts
from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.gather import OnDone
from rpbench.tasks.llm.structured import REASONING
from rpbench.tasks.modes.rolellm.records import BenchRow, Ranking, RoleProfile

JUDGE = "rolellm-judge"


class _Place(BaseModel):
    answer: int
    reason: str = Field(max_length=600, json_schema_extra=REASONING)
    rank: int


class _Ranks(BaseModel):
    ranking: Any

    @model_validator(mode="after")
    def _every_answer_once(self) -> _Ranks:
        n = len(self.ranking)
        if sorted(p.answer for p in self.ranking) != list(range(1, n + 1)):
            raise ValueError(f"rank every answer 1 to {n} exactly once")
        if any(not 1 <= p.rank <= n for p in self.ranking):
            raise ValueError(f"ranks go from 1 (best) to {n}")
        return self

    @classmethod
    def stand_in_reply(cls) -> dict[str, Any]:
        """What a plan (``--plan``) takes for a judge's ranking: every answer ranked once (no schema value a
        generic stand-in makes is a permutation)."""
        n = int(cls.model_json_schema()["properties"]["ranking"]["minItems"])
        return {"ranking": [{"answer": k + 1, "reason": "stand-in", "rank": n - k} for k in range(n)]}


@functools.cache
def ranks_schema(n: int) -> type[_Ranks]:
    return create_model(f"Ranking{n}", __base__=_Ranks,
                        ranking=(list[_Place], Field(min_length=n, max_length=n)))


def shown_order(row_id: str, systems: Sequence[str]) -> list[str]:
    """The systems in the order the judge sees their answers: shuffled, seeded by the question."""
    seed = int(hashlib.sha256(row_id.encode()).hexdigest()[:12], 16)
    order = sorted(systems)
    random.Random(seed).shuffle(order)
    return order


def request(row: BenchRow, profile: RoleProfile, answers: Mapping[str, str], judge_role: str, judge: str
            ) -> tuple[list[str], Request[Any]]:
    order = shown_order(row.row_id, list(answers))
    text = prompts.render("rolellm/rank", row.language, name=profile.name, description=profile.description,
                          question=row.question, answers=[answers[s] for s in order],
                          reference=row.generated[0] if row.kind == "role_specific" else None).text
    return order, Request(judge_role, [{"role": "user", "content": text}], schema=ranks_schema(len(order)),
                          tag=f"rolellm:rank:{row.row_id}:{judge}")


async def rank_all(gateway: Model, rows: Sequence[BenchRow], profiles: Mapping[str, RoleProfile],
                   answers: Mapping[str, Mapping[str, str]], judge_role: str, judge: str,
                   on_done: OnDone = None) -> list[Ranking]:
    """``answers``: row id -> system -> answer; rows with fewer than two answers are not ranked."""
    todo = [r for r in rows if len(answers.get(r.row_id, {})) >= 2]
    asks = [request(r, profiles[r.role], answers[r.row_id], judge_role, judge) for r in todo]
    results = await gateway.run_all([req for _, req in asks], on_done=on_done)
    out = []
    for row, (order, _), res in zip(todo, asks, results, strict=True):
        ranks = {order[p.answer - 1]: p.rank for p in res.parsed.ranking} if res.ok else None
        out.append(Ranking(row_id=row.row_id, judge=judge, order=order, ranks=ranks, status=res.status,
                           error=res.error))
    return out


def win_rates(rankings: Sequence[Ranking], reference: str) -> dict[str, dict[str, float | int | None]]:
    """Per system: win rate against ``reference`` (x100; a tie counts half), the share of questions ranked
    first (x100) and the mean rank, over the questions the judge ranked."""
    systems = sorted({s for r in rankings if r.ranks for s in r.ranks})
    out: dict[str, dict[str, float | int | None]] = {}
    for s in systems:
        mine = [r.ranks for r in rankings if r.ranks and s in r.ranks]
        against = [1.0 if k[s] < k[reference] else 0.5 if k[s] == k[reference] else 0.0
                   for k in mine if reference in k and s != reference]
        out[s] = {"win_rate": 100 * statistics.fmean(against) if against else None, "compared": len(against),
                  "first": 100 * statistics.fmean(k[s] == min(k.values()) for k in mine),
                  "mean_rank": statistics.fmean(k[s] for k in mine), "ranked": len(mine)}
    return out
