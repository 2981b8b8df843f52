"""What a CoSER request carries, as facts, and a scripted stand-in model that plays any CoSER agent.

CoSER's own code (Neph0s/CoSER, gca_evaluation) was run once against the loopback server answering with
``responder`` (how: the fixture's ``recorded_from``); ``facts`` turned each request it sent into
the facts below, kept in ``tests/data/coser_release_requests.json``. ``tests/test_coser_release.py`` runs
rpbench on the same circumstances against the same responder and compares the two fact by fact. No prompt
text of either side is kept: only which agent was asked, its limits, and which facts of the circumstance and
of the scene so far its input held.

The stand-in recognises each agent by the job its instructions describe (both CoSER's wording and rpbench's),
and answers so that a request's facts can be read back: the turn of round ``r`` says ``line r``, with the
speaker's thought in brackets, and the next speaker follows the book's own conversation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

ENVIRONMENT = "Environment"
DIMENSIONS = ("Storyline Consistency", "Anthropomorphism", "Character Fidelity", "Storyline Quality")
LAST_ROUND = 7  # the stand-in ends every scene here (CoSER lets a scene end from round 6 on, 0-based 5)
_TURN = re.compile(r"\((?:nods|env)\) (?:(?P<name>[^()\n]+?) speaks )?line (?P<r>\d+)\.")
_THOUGHT = re.compile(r"\[(?P<name>[^\[\]\n]+?) thinks (?P<r>\d+)\.\]")
_BRIEF = re.compile(r"(?:in terms of|on a single dimension:) (Storyline Consistency|Anthropomorphism|"
                    r"Character Fidelity|Storyline Quality)")
_ACTOR = re.compile(r"^You are (?:playing )?(?P<name>.+?)(?: from |, a character of )")


def _text(messages: Sequence[Mapping[str, Any]]) -> str:
    return "\n\n".join(str(m.get("content") or "") for m in messages)


def agent_of(system: str) -> str:
    """Which agent a request asks, from its instructions: actor:<name>, environment, next-speaker, critic:<dim>."""
    if "literary critic" in system:
        found = _BRIEF.search(system)
        return f"critic:{found.group(1) if found else '?'}"
    if "predict the next speaker" in system or "You direct the turn order" in system:
        return "next-speaker"
    if "environmental feedback" in system or "You voice the world" in system:
        return "environment"
    found = _ACTOR.match(system)
    return f"actor:{found.group('name')}" if found else "?"


def circumstance_of(system: str, circumstances: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The circumstance whose scenario the instructions quote (every agent and the critic see the scenario)."""
    found = [c for c in circumstances if c["scenario"].strip() in system]
    if len(found) != 1:
        raise LookupError(f"{len(found)} circumstances match a request")
    return found[0]


def case_id(c: Mapping[str, Any]) -> str:
    return f"{c['book']}-{c['plot']['i_p']}-{c['i_c']}"


def turns_heard(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """(speaker, round) of every scene turn the conversation holds, in order."""
    return [(m.group("name") or ENVIRONMENT, int(m.group("r"))) for m in _TURN.finditer(_text(messages))]


def scripted_turn(name: str, round_: int) -> str:
    if name == ENVIRONMENT:
        return f"(env) line {round_}."
    return f"[{name} thinks {round_}.] (nods) {name} speaks line {round_}."


def next_speaker(c: Mapping[str, Any], current: str, round_: int) -> str:
    """The book's order of speakers where it can be followed; the end from the last round the stand-in plays."""
    speaking = list(c["speaking_characters_w_env"])
    if ENVIRONMENT not in speaking:
        speaking.append(ENVIRONMENT)
    order = [d["character"] for d in c["dialogues"]]
    if round_ >= LAST_ROUND or (round_ >= 5 and round_ + 1 >= len(order)):
        return "<END CHAT>"
    wanted = order[(round_ + 1) % len(order)]
    if wanted in speaking and wanted != current:
        return wanted
    return next(s for s in speaking if s != current)


def responder(circumstances: Sequence[Mapping[str, Any]]) -> Callable[[dict[str, Any]], str]:
    def respond(body: dict[str, Any]) -> str:
        messages = body["messages"]
        system = str(messages[0]["content"])
        agent = agent_of(system)
        c = circumstance_of(system, circumstances)
        heard = turns_heard(messages[1:])
        round_ = len(heard)
        if agent.startswith("critic:"):
            dimension = agent.split(":", 1)[1]
            return json.dumps({dimension: {"flaws": [{"instance": "line 1", "type": dimension, "severity": 2}]}})
        if agent == "next-speaker":
            current = heard[-1][0] if heard else c["speaking_characters_w_env"][0]
            return f"Reasoning: the book's order.\nNext Speaker: {next_speaker(c, current, round_ - 1)}"
        if agent == "environment":
            return scripted_turn(ENVIRONMENT, round_)
        return scripted_turn(agent.split(":", 1)[1], round_)

    return respond


def _profiles(c: Mapping[str, Any]) -> dict[str, str]:
    """Each speaking character's profile as CoSER builds it (the plot's description first, then the book's)."""
    described = {k.get("name"): k.get("description") for k in c["plot"].get("key_characters") or []}
    out = {}
    for name in c["speaking_characters_w_env"]:
        if name == ENVIRONMENT:
            continue
        profile = str(c["character_profiles"].get(name) or "")
        if isinstance(described.get(name), str):
            profile = described[name].strip("\n") + "\n\n" + profile.strip("\n")
        profile = profile.strip(" \n")
        if profile:
            out[name] = profile
    return out


def _thought(c: Mapping[str, Any], name: str) -> str:
    for k in c.get("key_characters") or []:
        if k.get("name") == name:
            return str(k.get("thought") or k.get("motivation") or "")
    return ""


def _without_thoughts(text: str) -> str:
    return re.sub(r"\[.*?\]", "", text).strip()


def _speaker(agent: str) -> str | None:
    """The scene speaker an agent is (None for the predictor and the critic)."""
    return ENVIRONMENT if agent == "environment" else agent.split(":", 1)[1] if agent.startswith("actor:") else None


def _named(text: str, name: str, round_: int) -> bool:
    visible = _without_thoughts(scripted_turn(name, round_))
    return re.search(re.escape(f"{name}:") + r"\s*(?:\[[^\]]*\]\s*)?" + re.escape(visible), text) is not None


def facts(body: Mapping[str, Any], circumstances: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The facts one request carries (see the module's docstring)."""
    messages = body["messages"]
    system = str(messages[0]["content"])
    rest = messages[1:]
    said = _text(rest)
    agent = agent_of(system)
    c = circumstance_of(system, circumstances)
    heard = turns_heard(rest)
    out: dict[str, Any] = {
        "case": case_id(c), "agent": agent, "round": len(heard) if not agent.startswith("critic:") else None,
        "max_tokens": body.get("max_tokens"), "temperature": body.get("temperature"),
        # What else the request sets besides its model and messages.
        "also_sent": sorted(set(body) - {"model", "messages", "max_tokens", "temperature", "stream"}),
        "scenario": c["scenario"].strip() in system,
        "turns": [[name, r] for name, r in heard],
        # Every turn of someone else comes under its speaker's name (an agent's own turns are its replies).
        "turns_named": all(_named(said, name, r) for name, r in heard if name != _speaker(agent)),
    }
    if agent.startswith("actor:"):
        name = agent.split(":", 1)[1]
        profiles = _profiles(c)
        own = [r for speaker, r in heard if speaker == name]
        out.update({
            "profile": profiles.get(name, "") in system if profiles.get(name) else None,
            "thought": (_thought(c, name).strip() in system) if _thought(c, name).strip() else None,
            "others_profiles": all(p in system for other, p in profiles.items() if other != name),
            "plot_summary": str(c["plot"].get("summary") or "").strip() in system,
            "at_most_60_words": bool(re.search(r"\b60 words\b", system)),
            "own_turns_as_assistant": all(scripted_turn(name, r) in _text(
                [m for m in rest if m["role"] == "assistant"]) for r in own),
            # Nobody hears another character's thoughts.
            "others_thoughts_heard": sorted({int(m.group("r")) for m in _THOUGHT.finditer(said)
                                             if m.group("name") != name}),
        })
    elif agent == "next-speaker":
        out["candidates"] = all(s in system for s in c["speaking_characters_w_env"])
    elif agent == "environment":
        out["main_characters"] = all(m in system for m in c["major_characters"] if m != ENVIRONMENT)
    else:
        original = [d for d in c["dialogues"]]
        out.update({
            "scene_thoughts_removed": not _THOUGHT.search(said),
            "original": all(_without_thoughts(d["message"]) in system for d in original),
            "original_named": all(f"{d['character']}: " in system for d in original),
            "profiles": all(p.strip() in system for p in _profiles(c).values()),
            "plot_summary": str(c["plot"].get("summary") or "").strip() in system,
        })
    return out
