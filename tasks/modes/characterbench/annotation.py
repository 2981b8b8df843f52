"""CharacterBench's annotation kind: people score replies on their dimension in Label Studio, as the release's
annotators did. One task per reply (a seeded sample), the character, the conversation, the reply and the
dimension's criterion and reference beside it; a score on the dimension's own scale, or unsure."""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rpbench import prompts
from rpbench.storage.tables import read_records
from rpbench.tasks.annotation.kinds import LAYOUT, AnnotationKind, Answer, Read, choice, dialogue_text, text
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.characterbench.dimensions import DIMENSIONS
from rpbench.tasks.modes.characterbench.tables import ITEMS, REPLIES

FIELD = "score"


def reply_tasks(run: Path, limit: int | None, seed: int) -> list[dict[str, Any]]:
    """Task data for a seeded sample of a CharacterBench run's replies (``limit`` at most)."""
    root = Path(run)
    for table in (ITEMS, REPLIES):
        if not (root / table.filename).is_file():
            raise InputError(f"{root}: no {table.filename} (a folder written by rpbench characterbench run?)")
    items = {(i.item_id, i.language): i for i in read_records(root / ITEMS.filename, ITEMS)}
    made = [r for r in read_records(root / REPLIES.filename, REPLIES) if r.status == "ok"
            and (r.item_id, r.language) in items]
    random.Random(seed).shuffle(made)
    out = []
    for r in made[:limit] if limit else made:
        i = items[(r.item_id, r.language)]
        dim = DIMENSIONS[i.dimension]
        out.append({"task": "characterbench", "item_id": i.item_id, "model": r.model, "language": i.language,
                    "dimension": i.dimension, "top": str(dim.top), "profile": i.profile,
                    "criterion": prompts.render("characterbench/criteria", i.language, dimension=i.dimension).text,
                    "dialogue": dialogue_text([(i.user if t.speaker == "user" else i.character, t.text)
                                               for t in i.dialogue]),
                    "reply": f"{i.character}: {r.text}", "reference": i.reference or "-",
                    "rpbench_key": f"{i.item_id}/{i.language}|{r.model}|characterbench"})
    return out


def reply_config(language: str) -> str:
    return prompts.render("annotation/characterbench", "zh" if language == "zh" else "en", layout=LAYOUT,
                          field=FIELD).text


def read_reply(data: Mapping[str, Any], result: Answer) -> Read:
    said = choice(result, FIELD)
    if said in (None, "unsure"):
        return "unsure", {}
    if int(said) > int(data.get("top", 5)):
        # The config offers 1-5 for every dimension; a score above this dimension's scale is not one of its
        # answers, so it is kept as unsure rather than clipped.
        return "unsure", {}
    return "ok", {"item_id": data.get("item_id"), "language": data.get("language"), "model": data.get("model"),
                  "dimension": data.get("dimension"), "score": int(said), "comment": text(result, "comment")}


REPLY = AnnotationKind("characterbench", FIELD, reply_tasks, reply_config, read_reply)
