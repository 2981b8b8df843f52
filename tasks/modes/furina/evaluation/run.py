"""Evaluate models under test on a benchmark, stage by stage: answers, both-order judgments, checks, scores.

Base answers are made once per item and shared by every model under test;
every call is cached, so adding a model to an earlier evaluation costs only
that model's calls. Nothing unparseable becomes a score. An answer that
failed or came back empty is the model's own miss: it scores 0 in the
headline (every model is scored over the same items) and is listed as a
failure; a failed base answer or judgment is nobody's answer, so it leaves
the item out of that model's scores, also listed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from rpbench import prompts
from rpbench.tasks.core.records import Failure
from rpbench.tasks.llm import CallResult, Model, Request
from rpbench.tasks.llm.given import given_reply
from rpbench.tasks.llm.structured import REASONING
from rpbench.tasks.modes.furina.builder.turns import REASONING_CAP, dimension_text, test_turn_messages, test_view
from rpbench.tasks.modes.furina.config import EvalConfig
from rpbench.tasks.modes.furina.domain import Character, Generation, Item, Judgment, Scene, SceneCharacter
from rpbench.tasks.modes.furina.evaluation.scoring import DEFAULT_F, hallucinated, item_score
from rpbench.tasks.modes.furina.records import Check, ItemScore
from rpbench.tasks.stats.style import markup_count

BASE = "base"
OnDone = Callable[[int, int], Any] | None
# The items whose judge rationales the checker reads: CR items of synthesized characters, FR of established ones.
CHECKED = {("CR", "synthesized"), ("FR", "established")}


class JudgeVerdict(BaseModel):
    # Generous: real judges write long reasoning. A role's reasoning_chars shortens it (the small local model).
    reasoning: str = Field(max_length=REASONING_CAP, json_schema_extra=REASONING)
    sigma: Literal[1, 2, 3, 4, 5]


class CheckVerdict(BaseModel):
    answer: Literal["Yes", "No"]


@dataclass(frozen=True)
class Bench:
    """A benchmark as evaluation reads it: items, and the characters and scenes they refer to."""

    items: list[Item]
    characters: dict[str, Character]
    scenes: dict[str, Scene]


def _scene_characters(bench: Bench, item: Item) -> list[SceneCharacter]:
    return [c for c in bench.scenes[item.scene_id].characters if c.name != item.character]


def test_messages(bench: Bench, item: Item, extras: bool = False) -> list[dict[str, str]]:
    """The test character's prompt at the item's position, with the reply strategy of its dimension."""
    scene, ch = bench.scenes[item.scene_id], bench.characters[item.character]
    return test_turn_messages(scene, ch, _scene_characters(bench, item), item.history, item.dimension,
                              item.language, extras)


def judge_request(bench: Bench, item: Item, reply_a: str, reply_b: str, order: int, tag: str,
                  extras: bool = False) -> Request[JudgeVerdict]:
    """Both replies judged on the item's dimension, the judge shown everything the test character was shown."""
    lang = item.language
    view = test_view(bench.scenes[item.scene_id], bench.characters[item.character], _scene_characters(bench, item),
                     item.history, item.dimension, lang, extras)
    text = prompts.render("furina/eval/judge", lang, **view, reply_a=reply_a, reply_b=reply_b,
                          definition=dimension_text("definition", item.dimension, lang)).text
    return Request("judge", [{"role": "user", "content": text}], schema=JudgeVerdict, tag=f"{tag}:order{order}")


def check_request(item: Item, rationale: str, order: int, tag: str) -> Request[CheckVerdict]:
    """The test reply is A in order 1 and B in order 2: the checker is told which one to look for."""
    text = prompts.render("furina/eval/checker", item.language, rationale=rationale,
                          test_label="A" if order == 1 else "B").text
    return Request("checker", [{"role": "user", "content": text}], schema=CheckVerdict, tag=tag)


async def answer(gateway: Model, bench: Bench, role: str, name: str, cfg: EvalConfig,
                 on_done: OnDone = None) -> list[Generation]:
    """Every item answered by the model bound to ``role``, recorded under ``name`` (``base`` for the base)."""
    requests: list[Request[None]] = [
        Request(role, test_messages(bench, it, cfg.test_sees_scene_extras), tag=f"eval:{it.item_id}:{name}")
        for it in bench.items]
    results = await gateway.run_all(requests, on_done=on_done)
    return [_generation(it.item_id, name, r) for it, r in zip(bench.items, results, strict=True)]


def given_generations(bench: Bench, texts: Mapping[str, str], name: str, source: str) -> list[Generation]:
    """A file's replies (item id -> text) as ``name``'s generations, read as live replies are."""
    return [_generation(it.item_id, name, given_reply(texts.get(it.item_id), name,
                                                      missing=f"{source} has no reply for this item"))
            for it in bench.items]


def _generation(item_id: str, model: str, res: CallResult[Any]) -> Generation:
    if res.ok and res.text.strip():
        return Generation(item_id=item_id, model=model, text=res.text, status="ok")
    error = res.error if not res.ok else "empty reply"
    return Generation(item_id=item_id, model=model, text=None, status="failed", error=error)


async def judge(gateway: Model, bench: Bench, base: Sequence[Generation], answers: Sequence[Generation],
                name: str, on_done: OnDone = None, extras: bool = False) -> list[Judgment]:
    """Both orders (test reply as A, then base as A) for every item where both answers exist."""
    base_of = {g.item_id: g for g in base}
    answer_of = {g.item_id: g for g in answers}
    requests, keys = [], []
    for it in bench.items:
        b, t = base_of[it.item_id], answer_of[it.item_id]
        if b.text is None or t.text is None:
            continue
        tag = f"eval:{it.item_id}:{name}:judge"
        requests += [judge_request(bench, it, t.text, b.text, 1, tag, extras),
                     judge_request(bench, it, b.text, t.text, 2, tag, extras)]
        keys += [(it.item_id, 1), (it.item_id, 2)]
    verdicts = await gateway.run_all(requests, on_done=on_done)
    return [
        Judgment(item_id=item_id, model=name, order=order, sigma=v.parsed.sigma, rationale=v.parsed.reasoning,
                 status="ok")
        if v.ok else
        Judgment(item_id=item_id, model=name, order=order, sigma=None, rationale=None, status="failed",
                 raw=v.text, error=v.error)
        for (item_id, order), v in zip(keys, verdicts, strict=True)
    ]


async def check(gateway: Model, bench: Bench, judgments: Sequence[Judgment], name: str,
                on_done: OnDone = None) -> list[Check]:
    """The checker reads the rationale of each parsed judgment of a checked item, in both orders."""
    items = {it.item_id: it for it in bench.items}
    requests, keys = [], []
    for j in judgments:
        it = items[j.item_id]
        if j.status == "ok" and j.rationale is not None and (it.dimension, it.character_type) in CHECKED:
            requests.append(check_request(it, j.rationale, j.order, f"eval:{j.item_id}:{name}:check{j.order}"))
            keys.append((j.item_id, j.order))
    results = await gateway.run_all(requests, on_done=on_done)
    return [Check(item_id=item_id, model=name, order=order, answer=c.parsed.answer if c.ok else None,
                  status="ok" if c.ok else "failed", error=c.error)
            for (item_id, order), c in zip(keys, results, strict=True)]


def score(bench: Bench, base: Sequence[Generation], answers: Sequence[Generation], judgments: Sequence[Judgment],
          checks: Sequence[Check], name: str, f: Mapping[int, float] = DEFAULT_F
          ) -> tuple[list[ItemScore], list[Failure]]:
    """A score row per item; an unanswered item scores 0 (and is a failure), an unjudged one is only a failure."""
    base_of = {g.item_id: g for g in base}
    answer_of = {g.item_id: g for g in answers}
    judged = {(j.item_id, j.order): j for j in judgments}
    checked = {(c.item_id, c.order): c for c in checks}
    scores: list[ItemScore] = []
    failures: list[Failure] = []

    def fail(item_id: str, stage: str, kind: str, error: str | None, scored: bool = False) -> None:
        failures.append(Failure(stage=stage, model=name, item_id=item_id, kind=kind, error=error, scored=scored))

    for it in bench.items:
        b, t = base_of[it.item_id], answer_of[it.item_id]
        if b.status != "ok" or b.text is None:
            fail(it.item_id, "answers", "base_answer_failed", b.error)
            continue
        row: dict[str, Any] = {"item_id": it.item_id, "model": name, "dimension": it.dimension, "language": it.language,
               "character": it.character, "character_type": it.character_type, "dialogue_id": it.dialogue_id,
               "base_chars": len(b.text.strip()), "base_markup": markup_count(b.text)}
        if t.status != "ok" or t.text is None:
            fail(it.item_id, "answers", "answer_failed", t.error)
            scores.append(ItemScore(**row, answered=False, sigma1=None, sigma2=None, score=0.0, score_answered=None,
                                    hallucinated=None, test_chars=None, test_markup=None))
            continue
        j1, j2 = judged[(it.item_id, 1)], judged[(it.item_id, 2)]
        if j1.sigma is None or j2.sigma is None:
            fail(it.item_id, "judgments", "judgment_failed", j1.error or j2.error)
            continue
        c1, c2 = checked.get((it.item_id, 1)), checked.get((it.item_id, 2))
        halluc = None
        if c1 is not None and c2 is not None:
            if c1.status == "ok" and c2.status == "ok":
                halluc = hallucinated(c1.answer == "Yes", c2.answer == "Yes")
            else:
                fail(it.item_id, "checks", "check_failed", c1.error or c2.error, scored=True)
        value = item_score(j1.sigma, j2.sigma, dict(f))
        scores.append(ItemScore(**row, answered=True, sigma1=j1.sigma, sigma2=j2.sigma, score=value,
                                score_answered=value, hallucinated=halluc, test_chars=len(t.text.strip()),
                                test_markup=markup_count(t.text)))
    return scores, failures


@dataclass
class EvalTables:
    generations: list[Generation]
    judgments: list[Judgment]
    checks: list[Check]
    item_scores: list[ItemScore]
    failures: list[Failure]


async def evaluate(gateway: Model, bench: Bench, models: Mapping[str, str], cfg: EvalConfig) -> EvalTables:
    """Every stage for every model in memory (name -> role), for tests and benchmarks."""
    base = await answer(gateway, bench, BASE, BASE, cfg)
    tables = EvalTables(list(base), [], [], [], [])
    for name, role in models.items():
        answers = await answer(gateway, bench, role, name, cfg)
        judgments = await judge(gateway, bench, base, answers, name, extras=cfg.test_sees_scene_extras)
        checks = await check(gateway, bench, judgments, name)
        scores, failures = score(bench, base, answers, judgments, checks, name, cfg.f)
        tables.generations += answers
        tables.judgments += judgments
        tables.checks += checks
        tables.item_scores += scores
        tables.failures += failures
    return tables
