"""What a CharacterBench request carries, as facts (no prompt text is kept).

CharacterBench's own code (thu-coai/CharacterBench f4ec56a: process.py asking a model to reply,
construct_prompts/process_wo_context_*_all.py building the judge's input) was run once on rpbench's shipped
samples (how: the fixture's ``source``); the facts below, taken from what it sent and built, are kept in
``tests/data/characterbench_release_requests.json``.
``tests/test_characterbench.py`` takes the same facts from what rpbench sends for the same items and compares.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

REPLY = "（点头）好的！坐稳了！"  # every reply the stand-in model gives, in the JSON the release asks for (no ，or 。:
# the release turns those into , and . before the judge sees the reply)


def _label_before(text: str, said: str, colon: str) -> str | None:
    """The speaker label a line quoting ``said`` starts with (``label: said``), or None when none does."""
    found = re.search(rf"(?m)^([^\n{colon}]*){colon}\s?{re.escape(said)}\s*$", text)
    return found.group(1).strip() if found else None


def actor_facts(body: Mapping[str, Any], item: Mapping[str, Any], language: str) -> dict[str, Any]:
    """What the reply request carries: its messages' roles, which settings it sends, the dialogue as labelled
    lines (in order), and which facts of the item's profile the prompt holds."""
    source = item if language == "zh" else item["translation_en"]
    text = "\n".join(str(m.get("content")) for m in body["messages"])
    lines = [(m.group(1), m.group(2)) for m in re.finditer(r"(?m)^(user|assistant): ?(.*)$", text)]
    return {"roles": [m["role"] for m in body["messages"]],
            "also_sent": sorted(k for k in body if k not in ("model", "messages", "stream")),
            "lines": [list(x) for x in lines], "profile": source["character_profile"] in text,
            "asks_json": '"response"' in text, "length_ask": ("30" if language == "zh" else "15") in text}


def judge_facts(text: str, item: Mapping[str, Any], language: str, reply: str) -> dict[str, Any]:
    """What the judge's input holds: the label before each earlier turn, the user's last turn and the reply;
    the reference's parts; the profile."""
    source = item if language == "zh" else item["translation_en"]
    turns = source["dialogue"]
    found = {"turns": [_label_before(text, t["utterance"], "：") for t in turns[:-1]],
             "last": _label_before(text, turns[-1]["utterance"], "："), "reply": _label_before(text, reply, "："),
             "profile": str(source["character_profile"]) in text}
    output = (source.get("messages") or {}).get("output") or {}
    for key in ("answer", "emotion"):
        if key in output:
            found["reference"] = output[key] in text
    if "dialogue_segments" in output:
        found["reference"] = [_label_before(text, s, "：") for s in output["dialogue_segments"]]
    return found


def by_item(records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {f"{r['dimension']}:{r['id']}:{r['language']}": r for r in records}
