"""CoSER's annotation kind: rate a simulated scene per dimension in Label Studio. One task per model and
circumstance (a seeded sample), the scene beside the book's conversation, rated 1-5 on Storyline Consistency,
Anthropomorphism, Character Fidelity and Storyline Quality; a dimension left unsure stays blank."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rpbench import prompts
from rpbench.storage.tables import run_records
from rpbench.tasks.annotation.kinds import LAYOUT, AnnotationKind, Answer, Read, choice, dialogue_text, text
from rpbench.tasks.modes.coser.records import COLUMNS, DIMENSIONS, NEXT_SPEAKER
from rpbench.tasks.modes.coser.tables import CIRCUMSTANCES, MESSAGES, SCENE_ENDS

QUESTIONS = {
    "en": {
        "Storyline Consistency": "Storyline consistency: do the characters react as they do in the book's "
                                 "conversation?",
        "Anthropomorphism": "Anthropomorphism: do they behave like people, with aims, depth and tact of their own?",
        "Character Fidelity": "Character fidelity: do the main characters speak, know and act as the book has them?",
        "Storyline Quality": "Storyline quality: does the conversation move naturally, without repeating itself?",
    },
    "zh": {
        "Storyline Consistency": "情节一致：人物的反应是否与原书对话中一致？",
        "Anthropomorphism": "拟人程度：他们是否像真实的人，有自己的目标、深度和分寸？",
        "Character Fidelity": "人物还原：主要人物的说话、见识和行为是否符合原书？",
        "Storyline Quality": "情节质量：对话是否推进自然、不重复？",
    },
}


def coser_tasks(run: Path, limit: int | None, seed: int) -> list[dict[str, Any]]:
    """Task data for a seeded sample of a CoSER run's finished scenes (``limit`` at most)."""
    by_id = {c.circumstance_id: c for c in run_records(run, CIRCUMSTANCES, "rpbench coser run")}
    finished = {(e.model, e.circumstance_id) for e in run_records(run, SCENE_ENDS, "rpbench coser run")
                if e.status == "ok"}
    scenes: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for m in run_records(run, MESSAGES, "rpbench coser run"):
        if m.role != NEXT_SPEAKER and (m.model, m.circumstance_id) in finished:
            scenes[(m.model, m.circumstance_id)].append((m.role, m.said))
    keys = sorted(k for k in scenes if k[1] in by_id)
    random.Random(seed).shuffle(keys)
    out = []
    for model, cid in keys[:limit] if limit else keys:
        c = by_id[cid]
        out.append({"task": "coser", "model": model, "circumstance_id": cid, "book": c.book, "language": c.language,
                    "scenario": c.scenario, "scene": dialogue_text(scenes[(model, cid)]),
                    "original": dialogue_text([(t.speaker, t.text) for t in c.original]),
                    "rpbench_key": f"{cid}|{model}|coser"})
    return out


def coser_config(language: str) -> str:
    lang = "zh" if language == "zh" else "en"
    return prompts.render("annotation/coser", lang, dimensions=[(COLUMNS[d], QUESTIONS[lang][d]) for d in DIMENSIONS],
                          layout=LAYOUT).text


def read_scene(data: Mapping[str, Any], result: Answer) -> Read:
    ratings = {COLUMNS[d]: choice(result, COLUMNS[d]) for d in DIMENSIONS}
    rated = {k: int(v) for k, v in ratings.items() if v not in (None, "unsure")}
    if not rated:  # a dimension left unsure stays blank, never guessed; all of them unsure is an unsure answer
        return "unsure", {}
    return "ok", {"model": data.get("model"), "circumstance_id": data.get("circumstance_id"),
                  **{k: rated.get(k) for k in ratings}, "comment": text(result, "comment")}


SCENE = AnnotationKind("coser", COLUMNS[DIMENSIONS[0]], coser_tasks, coser_config, read_scene)
