"""An annotation kind for any benchmark whose judge scores one reply on one criterion: people give the same
score on the same scale (1 up to the task's ``top``) or say they are unsure. A mode gives the tasks; each task's
data holds ``dimension``, ``top``, ``profile``, ``dialogue``, ``reply``, ``criterion`` and ``reference``."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rpbench import prompts
from rpbench.storage.user_files import Fields
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


ReplyKey = tuple[str, str | None, str]  # item id, language (None where the run has none), model


def reply_key(row: Mapping[str, Any]) -> ReplyKey:
    """A reply's key as a run's item table and an annotations file both spell it (a CSV's empty language
    is a run's none)."""
    return str(row.get("item_id")), (str(row["language"]) if row.get("language") not in (None, "") else None), \
        str(row.get("model"))


@dataclass
class PairedScores:
    """People's scores of replies each beside the judge's score of the same reply."""

    pairs: list[tuple[Mapping[str, Any], float]] = field(default_factory=list)  # (the run's row, a person's score)
    unknown: list[ReplyKey] = field(default_factory=list)  # annotated replies the run has not
    unjudged: list[ReplyKey] = field(default_factory=list)  # annotated replies whose judging failed in the run

    def left_out(self) -> str:
        """What was not paired and why, in one sentence ("" when everything was)."""
        said = []
        if self.unknown:
            said.append(f"{len(self.unknown)} of replies the run does not have (first: "
                        f"{'/'.join(str(k) for k in self.unknown[0])})")
        if self.unjudged:
            said.append(f"{len(self.unjudged)} of replies the run's judge failed to score")
        return "annotations left out: " + "; ".join(said) if said else ""


def pair_reply_scores(path: str | Path, annotations: Iterable[Any], items: Iterable[Mapping[str, Any]]
                      ) -> PairedScores:
    """Each annotation (``item_id, language, model, score``, optionally ``annotator``) with the run's row of the
    same reply. A score that is not a finite number, or one annotator's second score of one reply, is an
    error naming the record; an annotation of a reply the run lacks or did not score is counted as left out."""
    rows = {reply_key(r): r for r in items}
    paired, seen = PairedScores(), dict[tuple[str, ReplyKey], int]()
    for n, record in enumerate(annotations):
        fields = Fields(record, f"{path}: record {n}")
        value = fields.get("score")
        try:
            if isinstance(value, bool):
                raise ValueError(value)
            human = float(value)
        except (TypeError, ValueError):
            raise fields.fail("score", "missing or not a number (a reply-score annotation?)") from None
        if not math.isfinite(human):
            raise fields.fail("score", f"'{value}' is not a finite number")
        key = reply_key(record)
        annotator = fields.text("annotator", required=False)
        if annotator is not None:
            if (annotator, key) in seen:
                raise fields.fail("score", f"annotator '{annotator}' already scored this reply in record "
                                           f"{seen[(annotator, key)]}")
            seen[(annotator, key)] = n
        found = rows.get(key)
        if found is None:
            paired.unknown.append(key)
        elif found.get("score") is None:
            paired.unjudged.append(key)
        else:
            paired.pairs.append((found, human))
    return paired
