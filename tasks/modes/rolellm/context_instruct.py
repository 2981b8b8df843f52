"""Context-Instruct: role-specific questions and answers generated from a role's own profile.

From each script segment the generator (role ``rolellm-generator``) writes a few question-confidence-answer
triplets whose confidence is about completeness (does the question name its people, places and events?); from
the description it writes batches whose confidence is about factualness (is the question true to the role?),
and more description batches are asked for until the role has enough candidates. Then, as RoleLLM filters
them: only High confidence is kept; answers failing the cleaning rules go; questions are de-duplicated with
BM25 (a question too close to one kept before it is a duplicate). The kept questions are the training set;
the duplicates are the test set, at most 50 per role, those least like the training questions first (they ask
what training covers, in other words). Every candidate stays in the triplets table with its outcome.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from rpbench import prompts
from rpbench.tasks.core.records import Failure
from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.gather import OnDone
from rpbench.tasks.llm.structured import REASONING
from rpbench.tasks.modes.rolellm.cleaning import unclean
from rpbench.tasks.modes.rolellm.records import RoleProfile, Triplet
from rpbench.tasks.modes.rolellm.splits import TEST_ROLE_SHARE, held_out_roles
from rpbench.tasks.stats.similarity import BM25Index

GENERATOR = "rolellm-generator"


@dataclass(frozen=True)
class Plan:
    per_segment: int = 3  # script-based questions per call
    per_description_call: int = 10
    description_calls: int = 20
    min_candidates: int = 400  # more description calls until a role has this many candidates ...
    max_topup_calls: int = 20  # ... but at most this many more
    duplicate_share: float = 0.6  # a question scoring this share of a kept one's self-score is a duplicate
    max_test: int = 50


class _Triplet(BaseModel):
    question: str = Field(min_length=3, max_length=400)
    reason: str = Field(max_length=400, json_schema_extra=REASONING)
    confidence: Literal["High", "Low"]
    answer: str = Field(min_length=1, max_length=2000)


class _Batch(BaseModel):
    triplets: Any


@functools.cache
def batch_schema(n: int) -> type[_Batch]:
    """Exactly ``n`` triplets (constrained decoding cannot stop short or run on)."""
    return create_model(f"Triplets{n}", __base__=_Batch,
                        triplets=(list[_Triplet], Field(min_length=n, max_length=n)))


@dataclass(frozen=True)
class Ask:
    origin: Literal["script_based", "script_agnostic"]
    segment: int
    call: int
    request: Request[Any]


def _ask(profile: RoleProfile, template: str, n: int, origin: Literal["script_based", "script_agnostic"],
         segment: int, call: int, **variables: Any) -> Ask:
    text = prompts.render(f"rolellm/{template}", profile.language, name=profile.name, n=n,
                          description=profile.description, script_name=profile.script_name, **variables).text
    tag = f"rolellm:ci:{profile.name}:{origin}:{segment}:{call}"
    return Ask(origin, segment, call, Request(GENERATOR, [{"role": "user", "content": text}], schema=batch_schema(n),
                                              sample_index=call, tag=tag))


def _collect(profile: RoleProfile, asks: Sequence[Ask], results: Sequence[Any]) -> tuple[list[Triplet], list[Failure]]:
    made, failed = [], []
    for ask, res in zip(asks, results, strict=True):
        if not res.ok:
            failed.append(Failure(stage="rolellm-triplets", model=GENERATOR, item_id=ask.request.tag or "",
                                  kind=ask.origin, error=res.error))
            continue
        made += [Triplet(role=profile.name, origin=ask.origin, segment=ask.segment, call=ask.call,
                         question=t.question.strip(), confidence=t.confidence, rationale=t.reason,
                         answer=t.answer.strip(), outcome="kept") for t in res.parsed.triplets]
    return made, failed


async def generate(gateway: Model, profile: RoleProfile, segments: Sequence[str], plan: Plan,
                   on_done: OnDone = None) -> tuple[list[Triplet], list[Failure]]:
    """Every candidate triplet of a role: from each segment, from the description, then top-up batches."""
    asks = [_ask(profile, "from_script", plan.per_segment, "script_based", k, 0, excerpt=s)
            for k, s in enumerate(segments)]
    asks += [_ask(profile, "from_description", plan.per_description_call, "script_agnostic", -1, c)
             for c in range(plan.description_calls)]
    made, failed = _collect(profile, asks, await gateway.run_all([a.request for a in asks], on_done=on_done))
    short = plan.min_candidates - len(made)
    if short > 0 and plan.max_topup_calls:
        calls = min(plan.max_topup_calls, -(-short // plan.per_description_call))
        more = [_ask(profile, "from_description", plan.per_description_call, "script_agnostic", -1,
                     plan.description_calls + c) for c in range(calls)]
        extra, extra_failed = _collect(profile, more, await gateway.run_all([a.request for a in more]))
        made, failed = made + extra, failed + extra_failed
    return made, failed


def filter_triplets(triplets: Sequence[Triplet], plan: Plan) -> list[Triplet]:
    """Every candidate with its outcome: low, unclean, kept (training), test, or duplicate."""
    out: list[Triplet] = []
    for t in triplets:
        if t.confidence != "High":
            out.append(t.model_copy(update={"outcome": "low", "reason": "confidence Low"}))
        elif (why := unclean(t.answer, t.role)) is not None:
            out.append(t.model_copy(update={"outcome": "unclean", "reason": why}))
        else:
            out.append(t)
    for role in sorted({t.role for t in out}):
        _deduplicate([i for i, t in enumerate(out) if t.role == role and t.outcome == "kept"], out, plan)
    return out


def _deduplicate(ids: list[int], out: list[Triplet], plan: Plan) -> None:
    """One role's High, clean candidates in order: a question too close to an earlier kept one is a duplicate;
    the duplicates least like the kept questions become the test set."""
    if not ids:
        return
    index = BM25Index([out[i].question for i in ids], floor=False)
    own = [index.scores_of(index.docs[j])[j] or 1e-9 for j in range(len(ids))]
    kept: list[int] = []
    closest: dict[int, float] = {}
    for j in range(len(ids)):
        scores = index.scores_of(index.docs[j])
        share = max((scores[k] / own[k] for k in kept), default=0.0)
        if share >= plan.duplicate_share:
            closest[j] = share
        else:
            kept.append(j)
    test = sorted(closest, key=lambda j: (closest[j], j))[:plan.max_test]
    for j, share in closest.items():
        outcome = "test" if j in test else "duplicate"
        out[ids[j]] = out[ids[j]].model_copy(update={"outcome": outcome,
                                                     "reason": f"BM25 share {share:.2f} of a kept question"})


def layout(triplets: Sequence[Triplet], languages: dict[str, str], seed: int = 0,
           test_role_share: float = TEST_ROLE_SHARE) -> tuple[dict[str, list[dict[str, object]]], list[str]]:
    """The kept (train) and test questions in RoleBench's folders, relative path -> rows; and notes on what
    could not be made.

    English roles get RoleBench's two splits: instruction generalization (each role's kept questions to train,
    its test questions to test) and role generalization (a seeded eighth or so of the roles, at least one, held
    out whole: all their questions to test, the others' kept questions to train; it needs two roles or more).
    Chinese roles get the instruction split, as RoleBench-zh has.
    """
    def rows(role_names: Sequence[str], outcomes: Sequence[str]) -> list[dict[str, object]]:
        return [{"role": t.role, "question": t.question, "generated": [t.answer], "type": [t.origin]}
                for t in triplets if t.role in role_names and t.outcome in outcomes]

    files: dict[str, list[dict[str, object]]] = {}
    notes: list[str] = []
    en = sorted(r for r, lang in languages.items() if lang != "zh")
    zh = sorted(r for r, lang in languages.items() if lang == "zh")
    for roles, folder in ((en, "rolebench-eng/instruction-generalization/role_specific"),
                          (zh, "rolebench-zh/role_specific")):
        if roles:
            files[f"{folder}/train.jsonl"] = rows(roles, ["kept"])
            files[f"{folder}/test.jsonl"] = rows(roles, ["test"])
    if len(en) >= 2:
        held = held_out_roles(en, seed, test_role_share)
        folder = "rolebench-eng/role-generalization/role_specific"
        files[f"{folder}/train.jsonl"] = rows([r for r in en if r not in held], ["kept"])
        files[f"{folder}/test.jsonl"] = rows(held, ["kept", "test"])
        notes.append(f"role generalization: held out {', '.join(held)}")
    elif en:
        notes.append("role generalization: needs two English roles or more (one given), so it is not written")
    return files, notes
