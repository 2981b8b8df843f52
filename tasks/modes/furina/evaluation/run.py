"""Evaluate models under test on a benchmark: answers, both-order judgments, hallucination checks, scores.

Base answers are made once per item and shared by every model under test;
every call is cached, so adding a model to an earlier evaluation costs only
that model's calls. Nothing unparseable becomes a score: a failed call leaves
its item out of that model's score, and is counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from rpbench import prompts
from rpbench.tasks.modes.furina.builder.turns import dimension_text, history_lines, test_turn_messages
from rpbench.tasks.modes.furina.characters.profile import full_profile
from rpbench.tasks.modes.furina.characters.schema import Character
from rpbench.tasks.modes.furina.evaluation.scoring import DEFAULT_F, hallucinated, item_score
from rpbench.tasks.llm import CallResult, Gateway, Request
from rpbench.tasks.modes.furina.pool.models import PoolScene


class JudgeVerdict(BaseModel):
    reasoning: str = Field(max_length=600)
    sigma: Literal[1, 2, 3, 4, 5]


class CheckVerdict(BaseModel):
    answer: Literal["Yes", "No"]


@dataclass
class EvalConfig:
    f: dict[int, float] = field(default_factory=lambda: dict(DEFAULT_F))
    resamples: int = 1000
    seed: int = 0
    test_sees_scene_extras: bool = False


@dataclass
class EvalTables:
    generations: list[dict[str, Any]]
    judgments: list[dict[str, Any]]
    checks: list[dict[str, Any]]
    item_scores: list[dict[str, Any]]
    failures: dict[str, dict[str, int]]


def bind_models(config: Any, models: list[str]) -> dict[str, str]:
    """Display name -> role. A model string gets a role `test@<model>` with the `test` role's settings."""
    roles = {}
    for m in models:
        if "/" in m:
            role = f"test@{m}"
            config.roles[role] = config.for_role("test").model_copy(update={"model": m})
        else:
            role = m
        roles[m] = role
    return roles


def judge_request(item: dict, character: Character, reply_a: str, reply_b: str, order: int, tag: str) -> Request:
    lang = item["language"]
    text = prompts.render(
        "furina/eval/judge", lang, name=character.name, profile=full_profile(character, lang),
        history=history_lines(item["history"]), reply_a=reply_a, reply_b=reply_b,
        definition=dimension_text("definition", item["dimension"], lang),
    ).text
    return Request("judge", [{"role": "user", "content": text}], schema=JudgeVerdict, tag=f"{tag}:order{order}")


def check_request(item: dict, rationale: str, order: int, tag: str) -> Request:
    """The test reply is A in order 1 and B in order 2: the checker is told which one to look for."""
    text = prompts.render("furina/eval/checker", item["language"], rationale=rationale, test_label="A" if order == 1 else "B").text
    return Request("checker", [{"role": "user", "content": text}], schema=CheckVerdict, tag=tag)


def _count(failures: dict[str, dict[str, int]], model: str, kind: str) -> None:
    failures.setdefault(model, {}).setdefault(kind, 0)
    failures[model][kind] += 1


async def evaluate(gateway: Gateway, items: list[dict], characters: dict[str, Character],
                   scenes: dict[str, PoolScene], models: dict[str, str], cfg: EvalConfig,
                   progress: Any = None) -> EvalTables:
    def track(name: str, total: int) -> Any:
        return progress(name, total) if progress else None

    failures: dict[str, dict[str, int]] = {}
    messages = {}
    for it in items:
        scene, ch = scenes[it["scene_id"]], characters[it["character"]]
        scene_chars = [c for c in scene.characters if c.name != ch.name]
        messages[it["item_id"]] = test_turn_messages(scene, ch, scene_chars, it["history"], it["dimension"],
                                                     it["language"], cfg.test_sees_scene_extras)
    # 1. answers: the base once per item, then every model under test.
    answer_reqs = [Request("base", messages[it["item_id"]], tag=f"eval:{it['item_id']}:base") for it in items]
    for name, role in models.items():
        answer_reqs += [Request(role, messages[it["item_id"]], tag=f"eval:{it['item_id']}:{name}") for it in items]
    answers = await gateway.run_all(answer_reqs, on_done=track("answers", len(answer_reqs)))
    n = len(items)
    base = {it["item_id"]: answers[i] for i, it in enumerate(items)}
    generations = [_gen_row(it["item_id"], "base", base[it["item_id"]]) for it in items]
    per_model: dict[str, dict[str, CallResult]] = {}
    for k, name in enumerate(models):
        per_model[name] = {it["item_id"]: answers[n * (k + 1) + i] for i, it in enumerate(items)}
        generations += [_gen_row(it["item_id"], name, per_model[name][it["item_id"]]) for it in items]

    # 2. judgments in both orders (test as A, then base as A).
    judge_reqs, judge_keys = [], []
    for name in models:
        for it in items:
            b, t = base[it["item_id"]], per_model[name][it["item_id"]]
            if not b.ok:
                _count(failures, name, "base_answer_failed")
                continue
            if not t.ok:
                _count(failures, name, "answer_failed")
                continue
            ch = characters[it["character"]]
            tag = f"eval:{it['item_id']}:{name}:judge"
            judge_reqs += [judge_request(it, ch, t.text, b.text, 1, tag), judge_request(it, ch, b.text, t.text, 2, tag)]
            judge_keys += [(name, it, 1), (name, it, 2)]
    verdicts = await gateway.run_all(judge_reqs, on_done=track("judgments", len(judge_reqs)))
    judgments = [
        {"item_id": it["item_id"], "model": name, "order": order,
         "sigma": v.parsed.sigma if v.ok else None, "rationale": v.parsed.reasoning if v.ok else None,
         "status": "ok" if v.ok else "failed", "raw": None if v.ok else v.text, "error": v.error}
        for (name, it, order), v in zip(judge_keys, verdicts, strict=True)
    ]
    by_key = {(j["model"], j["item_id"], j["order"]): j for j in judgments}

    # 3. hallucination checks on the rationales of CR items (synthesized) and FR items (established).
    check_reqs, check_keys = [], []
    items_by_id = {i["item_id"]: i for i in items}
    for (name, item_id, order), j in by_key.items():
        it = items_by_id[item_id]
        relevant = (it["dimension"], it["character_type"]) in {("CR", "synthesized"), ("FR", "established")}
        if j["status"] == "ok" and relevant:
            check_reqs.append(check_request(it, j["rationale"], order, f"eval:{item_id}:{name}:check{order}"))
            check_keys.append((name, item_id, order))
    checked = await gateway.run_all(check_reqs, on_done=track("hallucination checks", len(check_reqs)))
    checks = [{"item_id": item_id, "model": name, "order": order,
               "answer": c.parsed.answer if c.ok else None, "status": "ok" if c.ok else "failed"}
              for (name, item_id, order), c in zip(check_keys, checked, strict=True)]
    check_by = {(c["model"], c["item_id"], c["order"]): c for c in checks}

    # 4. item scores: only where both judgments parsed.
    scores = []
    for name in models:
        for it in items:
            j1, j2 = by_key.get((name, it["item_id"], 1)), by_key.get((name, it["item_id"], 2))
            if j1 is None or j2 is None:
                continue
            if j1["status"] != "ok" or j2["status"] != "ok":
                _count(failures, name, "judgment_failed")
                continue
            c1, c2 = check_by.get((name, it["item_id"], 1)), check_by.get((name, it["item_id"], 2))
            halluc = None
            if c1 is not None and c2 is not None:
                if c1["status"] == "ok" and c2["status"] == "ok":
                    halluc = hallucinated(c1["answer"] == "Yes", c2["answer"] == "Yes")
                else:
                    _count(failures, name, "check_failed")
            scores.append({
                "item_id": it["item_id"], "model": name, "dimension": it["dimension"], "language": it["language"],
                "character": it["character"], "character_type": it["character_type"],
                "sigma1": j1["sigma"], "sigma2": j2["sigma"], "score": item_score(j1["sigma"], j2["sigma"], cfg.f),
                "hallucinated": halluc,
            })
    return EvalTables(generations, judgments, checks, scores, failures)


def _gen_row(item_id: str, model: str, res: CallResult) -> dict[str, Any]:
    return {"item_id": item_id, "model": model, "text": res.text if res.ok else None,
            "status": "ok" if res.ok else "failed", "error": res.error}

