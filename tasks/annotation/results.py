"""Label Studio annotations back to rows (each kind reads its own answers), with what happened around them:
who, when, how long.

Skipped tasks and "unsure" answers are counted, never scored; an annotator who annotated a task twice keeps
the latest, and the duplicate is reported. Tasks rpbench did not push are left alone and counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rpbench.tasks.annotation.kinds import AnnotationKind


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


def _annotator(annotation: Mapping[str, Any], users: Mapping[int, str]) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, Mapping):
        return str(who.get("email") or who.get("id"))
    return users.get(int(who), str(who)) if who is not None else "unknown"


def _where(task: Mapping[str, Any], ann: Mapping[str, Any], when: str) -> dict[str, Any]:
    """When and where an answer was given: kept with every pulled row."""
    return {"annotated_at": when, "lead_time_s": ann.get("lead_time"), "label_studio_task": task.get("id"),
            "label_studio_annotation": ann.get("id")}


def read_back(tasks: Sequence[Mapping[str, Any]], users: Mapping[int, str],
              kinds: Mapping[str, AnnotationKind]) -> PullResult:
    """Rows from Label Studio tasks (``data`` and ``annotations`` as the API returns them); ``kinds`` reads
    each task's answers by the kind its data names."""
    out = PullResult()
    latest: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    for task in tasks:
        data = task.get("data") or {}
        key, kind = data.get("rpbench_key"), kinds.get(str(data.get("task")))
        if not key or kind is None:
            out.foreign += 1
            continue
        for ann in task.get("annotations") or []:
            annotator = _annotator(ann, users)
            when = str(ann.get("updated_at") or ann.get("created_at") or "")
            if ann.get("was_cancelled"):
                said: dict[str, Any] = {"status": "skipped"}  # counted once this annotator's latest is known
            else:
                status, row = kind.read(data, ann.get("result") or [])
                said = {"annotator": annotator, **row, **_where(task, ann, when)} if status == "ok" \
                    else {"status": status}
            slot = (key, annotator)
            if slot in latest:
                older_when = latest[slot][0]
                out.duplicates.append(f"{key} by {annotator}")
                if older_when > when:
                    continue
            latest[slot] = (when, said)
    for _slot, (_when, row) in sorted(latest.items()):
        if row.get("status") == "skipped":
            out.skipped += 1
        elif row.get("status") == "unsure":
            out.unsure += 1
        else:
            out.rows.append(row)
    return out
