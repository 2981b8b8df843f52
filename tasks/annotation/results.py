"""Label Studio annotations back to rows that ``rpbench validate`` reads (item_id, annotator, dimension or
score, model), with what happened around them: who, when, how long, in which order the replies were shown.

Pairwise scores are un-randomised: annotators score reply A against reply B (1 = A much better); when the
base's reply was shown first the score is mirrored (6 - score), so every row reads 1 = the reply under test
much better, as the judge's first order does. Skipped tasks and "unsure" answers are counted, never scored;
an annotator who annotated a task twice keeps the latest, and the duplicate is reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FIELDS = {"dimension": "dimension", "pairwise": "score", "pingpong": "in_character"}  # the choice each asks for
PINGPONG = ("in_character", "entertaining", "fluency")


@dataclass
class PullResult:
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    unsure: int = 0
    duplicates: list[str] = field(default_factory=list)  # "key by annotator" for each dropped older annotation
    foreign: int = 0  # tasks rpbench did not push (no rpbench_key): left alone

    def summary(self) -> dict[str, Any]:
        return {"rows": len(self.rows), "skipped": self.skipped, "unsure": self.unsure,
                "duplicates": len(self.duplicates), "duplicate_annotations": self.duplicates,
                "foreign_tasks": self.foreign}


def _choice(result: Sequence[Mapping[str, Any]], name: str) -> str | None:
    for region in result:
        if region.get("from_name") == name:
            choices = (region.get("value") or {}).get("choices") or []
            return str(choices[0]) if choices else None
    return None


def _text(result: Sequence[Mapping[str, Any]], name: str) -> str | None:
    for region in result:
        if region.get("from_name") == name:
            texts = (region.get("value") or {}).get("text") or []
            return " ".join(str(t) for t in texts).strip() or None
    return None


def _annotator(annotation: Mapping[str, Any], users: Mapping[int, str]) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, Mapping):
        return str(who.get("email") or who.get("id"))
    return users.get(int(who), str(who)) if who is not None else "unknown"


def _where(task: Mapping[str, Any], ann: Mapping[str, Any], when: str) -> dict[str, Any]:
    """When and where an answer was given: kept with every pulled row."""
    return {"annotated_at": when, "lead_time_s": ann.get("lead_time"), "label_studio_task": task.get("id"),
            "label_studio_annotation": ann.get("id")}


def read_back(tasks: Sequence[Mapping[str, Any]], users: Mapping[int, str]) -> PullResult:
    """Rows from Label Studio tasks (``data`` and ``annotations`` as the API returns them)."""
    out = PullResult()
    latest: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    for task in tasks:
        data = task.get("data") or {}
        key, kind = data.get("rpbench_key"), data.get("task")
        if not key or kind not in FIELDS:
            out.foreign += 1
            continue
        for ann in task.get("annotations") or []:
            annotator = _annotator(ann, users)
            when = str(ann.get("updated_at") or ann.get("created_at") or "")
            row: dict[str, Any] = {}
            if ann.get("was_cancelled"):
                status = "skipped"  # counted below, once the latest annotation of this annotator is known
            elif kind == "pingpong":
                ratings = {c: _choice(ann.get("result") or [], c) for c in PINGPONG}
                rated = {c: int(v) for c, v in ratings.items() if v not in (None, "unsure")}
                status = "ok" if rated else "unsure"  # a criterion left unsure stays blank, never guessed
                row = {"model": data.get("model"), "conversation_id": data.get("conversation_id"),
                       "annotator": annotator, **{c: rated.get(c) for c in PINGPONG},
                       "comment": _text(ann.get("result") or [], "comment"), **_where(task, ann, when)}
            else:
                raw = _choice(ann.get("result") or [], FIELDS[kind])
                status = "unsure" if raw in (None, "unsure") else "ok"
                if status == "ok":
                    row = {"item_id": data["item_id"], "model": data.get("model") or None, "task": kind,
                           "annotator": annotator, "language": data.get("language"),
                           "explanation": _text(ann.get("result") or [], "explanation"), **_where(task, ann, when)}
                    if kind == "dimension":
                        row |= {"dimension": raw, "score": None}
                    else:
                        shown_first, as_shown = data.get("shown_first"), int(str(raw))
                        row |= {"dimension": None, "score": as_shown if shown_first == "test" else 6 - as_shown,
                                "score_as_shown": as_shown, "shown_first": shown_first}
            slot = (key, annotator)
            if slot in latest:
                older_when = latest[slot][0]
                out.duplicates.append(f"{key} by {annotator}")
                if older_when > when:
                    continue
            latest[slot] = (when, row if status == "ok" else {"status": status})
    for _slot, (_when, row) in sorted(latest.items()):
        if row.get("status") == "skipped":
            out.skipped += 1
        elif row.get("status") == "unsure":
            out.unsure += 1
        else:
            out.rows.append(row)
    return out
