"""PingPong's annotation kind, its human check (its section 4.1) as Label Studio tasks: one task per model and
conversation, the character card and the whole conversation, rated 1-5 on in-character, entertaining and
fluency. Pulled rows are what ``rpbench pingpong agreement`` reads; a criterion left unsure stays blank."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rpbench import prompts
from rpbench.storage.tables import run_records
from rpbench.tasks.annotation.kinds import LAYOUT, AnnotationKind, Answer, Read, choice, dialogue_text, text
from rpbench.tasks.modes.pingpong.records import CRITERIA
from rpbench.tasks.modes.pingpong.tables import CARDS, CONVERSATIONS

LABELS = {
    "en": {"in_character": "In character: does the model stay true to the card's persona, voice and knowledge?",
           "entertaining": "Entertaining: is it engaging, vivid and fun to talk to?",
           "fluency": "Fluency: is the language natural and correct?"},
    "zh": {"in_character": "贴合角色：模型是否始终符合角色卡的人设、口吻和见识？",
           "entertaining": "有趣程度：对话是否生动、吸引人、让人愿意聊下去？",
           "fluency": "语言流畅：语言是否自然、通顺、没有错误？"},
}
USER = {"en": "User", "zh": "用户"}  # how the emulated user is named in the conversation annotators read


def pingpong_tasks(run: Path, limit: int | None, seed: int) -> list[dict[str, Any]]:
    """Task data for a seeded sample of a PingPong run's finished conversations (``limit`` per language)."""
    cards = {(c.language, c.name): c for c in run_records(run, CARDS, "rpbench pingpong run")}
    turns: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for t in run_records(run, CONVERSATIONS, "rpbench pingpong run"):
        turns[(t.model, t.conversation_id)].append(t)
    finished = {k: sorted(v, key=lambda t: t.turn) for k, v in turns.items() if all(t.status == "ok" for t in v)}
    by_language: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key in sorted(finished):
        by_language[finished[key][0].language].append(key)
    rng = random.Random(seed)
    out = []
    for language in sorted(by_language):
        keys = by_language[language]
        rng.shuffle(keys)
        for model, conversation in keys[:limit] if limit else keys:
            first = finished[(model, conversation)][0]
            card = cards.get((first.language, first.character))
            user = USER["zh" if language == "zh" else "en"]
            history = dialogue_text([line for t in finished[(model, conversation)]
                                     for line in ((user, t.user or ""), (first.character, t.player or ""))])
            out.append({"model": model, "conversation_id": conversation, "language": language, "task": "pingpong",
                        "character": first.character, "situation_id": first.situation_id,
                        "profile": card.system_prompt if card else first.character, "history": history,
                        "rpbench_key": f"{conversation}|{model}|pingpong"})
    return out


def pingpong_config(language: str) -> str:
    labels = LABELS["zh" if language == "zh" else "en"]
    return prompts.render("annotation/pingpong", language, criteria=[(c, labels[c]) for c in CRITERIA],
                          layout=LAYOUT).text


def read_conversation(data: Mapping[str, Any], result: Answer) -> Read:
    ratings = {c: choice(result, c) for c in CRITERIA}
    rated = {c: int(v) for c, v in ratings.items() if v not in (None, "unsure")}
    if not rated:  # a criterion left unsure stays blank, never guessed; all of them unsure is an unsure answer
        return "unsure", {}
    return "ok", {"model": data.get("model"), "conversation_id": data.get("conversation_id"),
                  **{c: rated.get(c) for c in CRITERIA}, "comment": text(result, "comment")}


CONVERSATION = AnnotationKind("pingpong", CRITERIA[0], pingpong_tasks, pingpong_config, read_conversation)
