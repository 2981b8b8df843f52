"""What a SocialBench (RoleInteract) request carries, as facts.

SocialBench's evaluation code (X-PLUG/SocialBench at f636254, before a later commit removed it:
``src/dataset.py``'s ``format_instruction``, and ``src/apis/*``, which send that one prompt with no sampling
setting) was run once on rpbench's shipped sample (``samples/roleinteract/example.json``: every column, English
and Chinese) and ``facts`` turned each prompt it builds into the facts kept in
``tests/data/socialbench_release_requests.json``. Its API calls go to an internal gateway, not to an
OpenAI-style server, so the request is its prompt sent alone: one user message, no temperature, no limit.
``tests/test_release_facts.py`` compares rpbench's requests for the same items with them. No prompt text is kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


def _utterances(item: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = []
    for u in item["dialogue"]:
        if "from" in u:
            out.append((str(u["from"]), str(u["value"])))
        else:
            ((speaker, text),) = u.items()
            out.append((str(speaker), str(text)))
    return out


def released_layout(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items with every utterance as the released files write it, ``{"from", "value"}`` (the release's code
    reads no other)."""
    return [{**item, "dialogue": [{"from": s, "value": t} for s, t in _utterances(item)]} for item in items]


def _lines(text: str) -> list[str]:
    return [line for line in re.split(r"\n+", text.strip()) if line.strip()]


def facts(prompt: str, item: Mapping[str, Any], roles: list[str], max_tokens: Any, temperature: Any) -> dict[str, Any]:
    """The facts of one request: ``prompt`` is the text sent (one user message in both)."""
    meta = item["meta"]
    name = meta.get("name")
    profiles = meta.get("profile") or {}
    utterances = _utterances(item)
    compact = re.sub(r"\s+", " ", prompt)
    out: dict[str, Any] = {
        "item": f"{meta['lang']}/{meta['category']}/{utterances[0][1][:24] if utterances else ''}",
        "roles": roles, "max_tokens": max_tokens, "temperature": temperature,
        # Every utterance under its speaker's name, in order.
        "dialogue_named": all(re.sub(r"\s+", " ", f"{s}: {t}").strip() in compact for s, t in utterances),
        "options": all(re.sub(r"\s+", " ", f"{k}. {v}").strip() in compact
                       for k, v in (item.get("choices") or {}).items()),
        "instruction": (re.sub(r"\s+", " ", item["instruction"]).strip() in compact) if item.get("instruction")
        else None,
        "role_name": (name in prompt) if name else None,
    }
    if name and name in profiles and not meta["category"].startswith("Group"):
        out["own_profile"] = all(line in prompt for line in _lines(profiles[name]))
    if meta["category"].startswith("Group"):
        # Each member's profile cut to its first ten lines, as the release's make_group_profiles does.
        out["group_profiles"] = all(all(line in prompt for line in _lines(p)[:10]) for p in profiles.values())
    if meta["category"] == "Individual-EP-DialogueEmotionDetect":
        out["last_utterance_quoted"] = f"\"{utterances[-1][1]}\"" in prompt
    return out
