"""The binary per-round judge: every round of every dialogue, good or bad, on each metric its role type gets.

A dialogue that ended on a failed call is not judged at all: it is a failure,
not a score. A judge call that fails leaves that label empty and is a failure:
that (dialogue, metric) is then left out of scoring, never guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from rpbench import prompts
from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.structured import REASONING
from rpbench.tasks.modes.dmt.catalog import allocated, metric_text
from rpbench.tasks.modes.dmt.records import Label, Round, Seed
from rpbench.tasks.modes.dmt.seeds import system_prompt

JUDGE = "dmt-judge"
OnDone = Callable[[int, int], Any] | None


class BinaryVerdict(BaseModel):
    explanation: str = Field(max_length=1000, json_schema_extra=REASONING)
    label: Literal["good", "bad"]


def judge_request(seed: Seed, rounds: Sequence[Round], r: Round, metric: str, tag: str) -> Request[BinaryVerdict]:
    name, definition = metric_text(metric, seed.language)
    text = prompts.render("dmt/judge", seed.language, name=seed.role.name, overview=seed.role.overview,
                          profile=seed.role.profile, system_prompt=system_prompt(seed, r.prompt_format),
                          history=[x for x in rounds if x.round < r.round], query=r.query, response=r.response,
                          metric_name=name, definition=definition).text
    return Request(JUDGE, [{"role": "user", "content": text}], schema=BinaryVerdict, tag=tag)


def to_judge(rounds: Sequence[Round], failed: set[str], model: str) -> list[Round]:
    """The rounds of ``model``'s dialogues that did not fail (``failed``: their ids)."""
    return [r for r in rounds if r.model == model and r.dialogue_id not in failed and r.status == "ok"]


async def label_all(gateway: Model, seeds: dict[str, Seed], rounds: Sequence[Round], model: str,
                    on_done: OnDone = None) -> list[Label]:
    """Labels of ``rounds`` (those ``to_judge`` keeps)."""
    by_dialogue: dict[str, list[Round]] = {}
    for r in rounds:
        if r.model == model:
            by_dialogue.setdefault(r.dialogue_id, []).append(r)
    labels: list[Label] = []
    requests, keys = [], []
    for did in sorted(by_dialogue):
        rs = sorted(by_dialogue[did], key=lambda x: x.round)
        seed = seeds[rs[0].seed_id]
        for r in rs:
            for metric in allocated(seed.role_type, seed.metrics):
                requests.append(judge_request(seed, rs, r, metric, f"dmt:{did}:{model}:round{r.round}:{metric}"))
                keys.append((did, r.round, metric))
    results = await gateway.run_all(requests, on_done=on_done)
    for (did, k, metric), res in zip(keys, results, strict=True):
        labels.append(Label(dialogue_id=did, model=model, round=k, metric=metric,
                            label=res.parsed.label if res.ok else None,
                            explanation=res.parsed.explanation if res.ok else None, source="judge",
                            status=res.status, error=res.error))
    return sorted(labels, key=lambda x: (x.dialogue_id, x.round, x.metric))
