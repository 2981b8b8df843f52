"""An annotation kind for any benchmark whose judge scores one reply on one criterion: people give the same
score on the same scale (1 up to the task's ``top``) or say they are unsure. A mode gives the tasks; each task's
data holds ``dimension``, ``top``, ``profile``, ``dialogue``, ``reply``, ``criterion`` and ``reference``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rpbench import prompts
from rpbench.tasks.annotation.kinds import LAYOUT, AnnotationKind, Answer, Read, choice, text

FIELD = "reply_score"


def reply_score_config(language: str) -> str:
    return prompts.render("annotation/reply_score", "zh" if language == "zh" else "en", layout=LAYOUT,
                          field=FIELD).text


def read_reply_score(data: Mapping[str, Any], result: Answer) -> Read:
    said = choice(result, FIELD)
    # The config offers 1-5 for every task; a score above this task's scale is none of its answers, so it is
    # kept as unsure rather than clipped.
    if said in (None, "unsure") or int(said) > int(data.get("top", 5)):
        return "unsure", {}
    return "ok", {"item_id": data.get("item_id"), "language": data.get("language"), "model": data.get("model"),
                  "dimension": data.get("dimension"), "score": int(said), "comment": text(result, "comment")}


def reply_score_kind(name: str, tasks: Callable[[Path, int | None, int], list[dict[str, Any]]]) -> AnnotationKind:
    return AnnotationKind(name, FIELD, tasks, reply_score_config, read_reply_score)
