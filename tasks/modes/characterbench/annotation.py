"""CharacterBench's annotation kind: people score replies on their item's dimension, as the release's
annotators did (a seeded sample of a run's replies; the shared reply-score kind)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from rpbench.storage.tables import run_records
from rpbench.tasks.annotation.kinds import dialogue_text
from rpbench.tasks.annotation.reply_scores import reply_score_kind
from rpbench.tasks.modes.characterbench.dimensions import DIMENSIONS
from rpbench.tasks.modes.characterbench.release import criterion
from rpbench.tasks.modes.characterbench.tables import ITEMS, REPLIES


def reply_tasks(run: Path, limit: int | None, seed: int) -> list[dict[str, Any]]:
    items = {(i.item_id, i.language): i for i in run_records(run, ITEMS, "rpbench characterbench run")}
    made = [r for r in run_records(run, REPLIES, "rpbench characterbench run")
            if r.status == "ok" and (r.item_id, r.language) in items]
    random.Random(seed).shuffle(made)
    out = []
    for r in made[:limit] if limit else made:
        i = items[(r.item_id, r.language)]
        out.append({"task": "characterbench", "item_id": i.item_id, "model": r.model, "language": i.language,
                    "dimension": i.dimension, "top": str(DIMENSIONS[i.dimension].top(i.language)), "profile": i.profile,
                    "criterion": criterion(i.dimension, i.language),
                    "dialogue": dialogue_text([(i.user if t.speaker == "user" else i.character, t.text)
                                               for t in i.dialogue]),
                    "reply": f"{i.character}: {r.text}", "reference": i.reference or "-",
                    "rpbench_key": f"{i.item_id}/{i.language}|{r.model}|characterbench"})
    return out


REPLY = reply_score_kind("characterbench", reply_tasks)
