"""A kind of Label Studio task a benchmark mode offers, and the helpers every kind uses to read answers.

A mode names its kinds in its spec (``BenchmarkMode.annotation``); `rpbench annotate` finds a kind there by
name and never knows which mode it belongs to. A kind turns a run folder into task data (each task carrying
``rpbench_key``, which makes a second push of the same work add nothing), gives the project's labeling
config, and reads one annotator's answer back into a row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Answer = Sequence[Mapping[str, Any]]  # an annotation's ``result`` regions, as Label Studio's API returns them
# What one answer says: ok with its row, or unsure (counted, never scored).
Read = tuple[Literal["ok", "unsure"], dict[str, Any]]


@dataclass(frozen=True)
class AnnotationKind:
    name: str
    # The choice every task of the kind asks for: how a project of this kind is recognised.
    field: str
    # (run folder, at most this many, seed) -> the data of each task; an InputError when the folder is not one
    # this kind reads.
    tasks: Callable[[Path, int | None, int], list[dict[str, Any]]]
    # language (en, zh) -> the project's labeling config (XML).
    config: Callable[[str], str]
    # (the task's data, the answer's regions) -> what the answer says.
    read: Callable[[Mapping[str, Any], Answer], Read]


# Two columns in every labeling config: the context on the left scrolls in its own box, so what the
# annotator judges (the replies, the choices) stays in view on a 1400x900 screen without scrolling the page.
LAYOUT = {
    "row": "display: flex; gap: 16px; align-items: flex-start;",
    "context": "flex: 1 1 50%; min-width: 0; max-height: 600px; overflow-y: auto; padding-right: 8px; "
               "border-right: 1px solid #ddd;",
    "answer": "flex: 1 1 50%; min-width: 0;",
}


def dialogue_text(lines: Sequence[tuple[str, str]]) -> str:
    """A dialogue as annotators read it: one ``Speaker: text`` paragraph per line (no player, no timestamps)."""
    return "\n\n".join(f"{speaker}: {said}" for speaker, said in lines)


def task_key(item_id: str, model: str, kind: str) -> str:
    """What identifies a task across pushes: the same work pushed again adds nothing."""
    return f"{item_id}|{model}|{kind}"


def choice(result: Answer, name: str) -> str | None:
    """The option chosen in the ``Choices`` control called ``name`` (None when left out)."""
    for region in result:
        if region.get("from_name") == name:
            choices = (region.get("value") or {}).get("choices") or []
            return str(choices[0]) if choices else None
    return None


def text(result: Answer, name: str) -> str | None:
    """What was typed in the ``TextArea`` called ``name`` (None when nothing was)."""
    for region in result:
        if region.get("from_name") == name:
            texts = (region.get("value") or {}).get("text") or []
            return " ".join(str(t) for t in texts).strip() or None
    return None
