"""The dynamic multi-turn dialogue of DMT-RoleBench (its Algorithm 1).

Round 1 is the seed's own query. Then, until the generator says the purpose is
served or the round limit is reached: the generator plans a sub-topic and a
sub-intent and writes the next query; a quality check passes it, edits it or
sends it back (at most ``max_regenerations`` times); the tested model, which
sees only its system prompt and the chat, replies. Every step is stored.

An exhausted quality check ends the dialogue there (scoring applies the
short-dialogue policy). A failed call ends it too, as a failure: the
generator's, or the tested model's (no usable reply after the gateway's
attempts, an empty reply included). A failed dialogue is never judged or
scored: its rounds would stand for a dialogue that did not happen.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from rpbench import prompts
from rpbench.tasks.llm import Model
from rpbench.tasks.llm.gather import OnDone, gather_counted
from rpbench.tasks.llm.messages import Message, merge_system
from rpbench.tasks.llm.structured import ENDS, REASONING
from rpbench.tasks.modes.dmt.catalog import INTENTS
from rpbench.tasks.modes.dmt.records import GENERATOR_FAILED, TESTED_MODEL_FAILED, DialogueEnd, Round, Seed, Step
from rpbench.tasks.modes.dmt.seeds import dialogue_id, system_prompt

GENERATOR = "dmt-generator"


class Termination(BaseModel):
    reason: str = Field(max_length=1000, json_schema_extra=REASONING)
    done: bool = Field(json_schema_extra=ENDS)


class NextQuery(BaseModel):
    sub_topic: str = Field(min_length=1, max_length=200)
    sub_intent: str = Field(min_length=1, max_length=300)
    query: str = Field(min_length=1)


class QualityCheck(BaseModel):
    reason: str = Field(max_length=1000, json_schema_extra=REASONING)
    verdict: Literal["pass", "modify", "regenerate"]
    revised_query: str


@dataclass(frozen=True)
class DialogueConfig:
    max_rounds: int = 5
    max_regenerations: int = 2
    merge_system: bool = False


@dataclass
class Dialogue:
    rounds: list[Round]
    steps: list[Step]
    end: DialogueEnd


def tested_messages(system: str, rounds: Sequence[Round], query: str, merge: bool) -> list[Message]:
    msgs: list[Message] = [{"role": "system", "content": system}]
    for r in rounds:
        msgs += [{"role": "user", "content": r.query}, {"role": "assistant", "content": r.response}]
    msgs.append({"role": "user", "content": query})
    return merge_system(msgs) if merge else msgs


async def run_dialogue(gateway: Model, seed: Seed, prompt_format: str, role: str, model: str,
                       cfg: DialogueConfig) -> Dialogue:
    did = dialogue_id(seed, prompt_format)
    system = system_prompt(seed, prompt_format)
    rounds: list[Round] = []
    steps: list[Step] = []
    view = {"name": seed.role.name, "overview": seed.role.overview, "profile": seed.role.profile,
            "topic": seed.topic, "intent": INTENTS[seed.intent]}

    def end(reason: str) -> Dialogue:
        return Dialogue(rounds, steps, DialogueEnd(dialogue_id=did, seed_id=seed.id, model=model,
                                                   rounds=len(rounds), reason=reason))

    async def generate(kind: Literal["terminate", "query", "verify"], k: int, attempt: int, schema: type[BaseModel],
                       **extra: Any) -> Any:
        text = prompts.render(f"dmt/{kind}", seed.language, **view, history=rounds, **extra).text
        res = await gateway.complete(GENERATOR, [{"role": "user", "content": text}], schema=schema,
                                     tag=f"dmt:{did}:{model}:round{k}:{kind}{attempt}")
        steps.append(Step(dialogue_id=did, model=model, round=k, step=kind, attempt=attempt,
                          output=json.dumps(res.parsed.model_dump(), ensure_ascii=False) if res.ok else None,
                          status=res.status, error=res.error))
        return res.parsed if res.ok else None

    query, plan, attempts = seed.initial_query, (None, None), 0
    for k in range(1, cfg.max_rounds + 1):
        if k > 1:
            verdict = await generate("terminate", k, 1, Termination, rounds=len(rounds), max_rounds=cfg.max_rounds)
            if verdict is None:
                return end(f"{GENERATOR_FAILED} (termination check)")
            if verdict.done:
                return end("purpose served")
            rejected: list[str] = []
            query = ""
            for attempt in range(1, cfg.max_regenerations + 2):
                drafted = await generate("query", k, attempt, NextQuery, rejected=rejected)
                if drafted is None:
                    return end(f"{GENERATOR_FAILED} (query)")
                checked = await generate("verify", k, attempt, QualityCheck, sub_topic=drafted.sub_topic,
                                         sub_intent=drafted.sub_intent, query=drafted.query)
                if checked is None:
                    return end(f"{GENERATOR_FAILED} (quality check)")
                plan, attempts = (drafted.sub_topic, drafted.sub_intent), attempt
                if checked.verdict == "pass":
                    query = drafted.query
                elif checked.verdict == "modify" and checked.revised_query.strip():
                    query = checked.revised_query.strip()
                if query:
                    break
                rejected.append(drafted.query)
            if not query:
                return end("no query passed the quality check")
        reply = await gateway.complete(role, tested_messages(system, rounds, query, cfg.merge_system),
                                       tag=f"dmt:{did}:{model}:round{k}:reply")
        rounds.append(Round(dialogue_id=did, seed_id=seed.id, model=model, prompt_format=prompt_format, round=k,
                            sub_topic=plan[0], sub_intent=plan[1], query=query, query_attempts=attempts,
                            response=reply.text if reply.ok else None, status=reply.status,
                            error=None if reply.ok else f"tested model: {reply.error}"))
        if not reply.ok:
            return end(TESTED_MODEL_FAILED)
    return end("max rounds")


async def run_all(gateway: Model, dialogues: Sequence[tuple[Seed, str]], role: str, model: str,
                  cfg: DialogueConfig, on_done: OnDone = None) -> list[Dialogue]:
    """Every (seed, format) dialogue side by side, each one's rounds in order; results in input order."""
    return await gather_counted([run_dialogue(gateway, s, f, role, model, cfg) for s, f in dialogues], on_done)
