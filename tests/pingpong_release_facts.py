"""What a PingPong request carries, as facts, and a scripted stand-in model that plays its interrogator, its
player and its judge.

PingPong's own code (IlyaGusev/ping_pong_bench at 4e3b0e0, ``src/run_eval_v2.py``) was run once against the
loopback server answering with ``responder``, on ``comparison_settings()`` (cards written for rpbench, in
PingPong's layout: one greeting spelled ``initial_message``, one spelled ``greeting`` as 3 of its own English
cards spell it, a Russian card); ``facts`` turned each request into the facts kept in
``tests/data/pingpong_release_requests.json``.
``tests/test_release_facts.py`` runs rpbench on the same cards and situations against the same stand-in and
compares the two fact by fact. No prompt text of either side is kept.

The stand-in recognises each agent by its job (both PingPong's wording and rpbench's). The emulated user's
message of turn k says ``ask-k``, the player's answer ``answer-k``, so a request's facts can be read back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_ASK = re.compile(r"\bask-(\d+)\b")
_ANSWER = re.compile(r"\banswer-(\d+)\b")
# Asked never to refuse (PingPong's player prompt says so in English and in Russian).
_NEVER_REFUSE = re.compile(r"never refuse|do not refuse|не отказывайся|Никогда не отказывайся", re.IGNORECASE)
# The criteria's top anchors as strong as PingPong's ("perfectly aligned", "extremely engaging", "highest quality").
ANCHORS = ("perfectly", "extremely", "highest")


def comparison_settings() -> dict[str, Any]:
    """A settings file in PingPong's own layout, made from rpbench's shipped sample and a Russian card of ours."""
    import yaml

    from rpbench.samples import sample_path

    sample = yaml.safe_load(sample_path("pingpong", "settings.yaml").read_text(encoding="utf-8"))["en"]
    mirela, tobias = sample["characters"][:2]
    situation = next(s for s in sample["situations"] if s["id"] == "bio")
    return {
        "en": {"version": 2, "characters": [
            {"char_name": mirela["name"], "system_prompt": mirela["system_prompt"], "summary": mirela["summary"],
             "example_prompt": mirela["example_dialogue"], "initial_message": mirela["greeting"]},
            {"char_name": tobias["name"], "system_prompt": tobias["system_prompt"], "summary": tobias["summary"],
             "greeting": "*pushes his glasses up* Oh! Did you hear that whisper from the atlas shelf?"}],
            "situations": [{"text": situation["text"], "tags": situation["tags"], "num_turns": 3}]},
        "ru": {"version": 2, "characters": [
            {"char_name": "Смотритель Аркадий", "summary": "Ворчливый смотритель маяка на северном острове.",
             "system_prompt": "Аркадий, 67 лет, тридцать лет смотрит за маяком на Северном Кресте. Говорит коротко, "
                              "любит чай с чабрецом, не доверяет приезжим и ненавидит туман.",
             "initial_message": "*не отрываясь от журнала* Чего надо? Лодка обратно только в четверг."}],
            "situations": [{"text": "Расспроси персонажа о его жизни и найди противоречия в его рассказе.",
                            "tags": ["bio"], "num_turns": 2}]},
    }


def _text(messages: Sequence[Mapping[str, Any]]) -> str:
    return "\n\n".join(str(m.get("content") or "") for m in messages)


def agent_of(messages: Sequence[Mapping[str, Any]]) -> str:
    """interrogator, player or judge, from the instructions."""
    text = _text(messages)
    if "impartial" in text:
        return "judge"
    if "generate the next user utterance" in text or "You are testing a role-play chatbot" in text:
        return "interrogator"
    return "player"


def responder() -> Callable[[dict[str, Any]], str]:
    def respond(body: dict[str, Any]) -> str:
        messages = body["messages"]
        agent = agent_of(messages)
        said = _text(messages)
        if agent == "interrogator":
            k = len(set(_ANSWER.findall(said))) + 1
            return json.dumps({"next_utterance": f"ask-{k}: tell me more."})
        if agent == "player":
            k = sum(m["role"] == "assistant" for m in messages) + 1
            return f"answer-{k}: a short, steady reply."
        turns = len(set(_ASK.findall(said)))
        why = "The player writes 'a short, steady reply'; I agree that it fits."
        return json.dumps({"scores": [{"turn": k, "is_refusal_explanation": why, "is_refusal": False,
                                       "in_character_explanation": why, "in_character_score": 4,
                                       "entertaining_explanation": why, "entertaining_score": 3,
                                       "fluency_explanation": why, "fluency_score": 5}
                                      for k in range(1, turns + 1)]})

    return respond


def card_of(text: str, cards: Sequence[Mapping[str, Any]], by: str) -> Mapping[str, Any]:
    found = [c for c in cards if str(c[by]).strip() in text]
    if len(found) != 1:
        raise LookupError(f"{len(found)} cards match a request by {by}")
    return found[0]


def greeting(card: Mapping[str, Any]) -> str:
    return str(card.get("initial_message") or card.get("greeting") or card.get("inital_message") or "")


def facts(body: Mapping[str, Any], cards: Sequence[Mapping[str, Any]], situations: Sequence[str]) -> dict[str, Any]:
    """The facts one request carries. ``cards``: PingPong-layout cards; ``situations``: their texts."""
    messages = body["messages"]
    said = _text(messages)
    agent = agent_of(messages)
    card = card_of(said, cards, "summary" if agent == "interrogator" else "system_prompt")
    out: dict[str, Any] = {
        "agent": agent, "character": card["char_name"],
        "roles": [m["role"] for m in messages] if agent != "player" else None,
        "max_tokens": body.get("max_tokens"), "temperature": body.get("temperature"), "top_p": body.get("top_p"),
        "also_sent": sorted(set(body) - {"model", "messages", "max_tokens", "temperature", "top_p", "stream"}),
        "asks": [int(k) for k in _ASK.findall(said)], "answers": [int(k) for k in _ANSWER.findall(said)],
    }
    if agent == "interrogator":
        out.update({"summary": True, "persona": str(card["system_prompt"]).strip() in said,
                    "situation": sum(s.strip() in said for s in situations) == 1})
    elif agent == "player":
        system = str(messages[0]["content"]) if messages[0]["role"] == "system" else ""
        g = greeting(card)
        out.update({
            "persona_in_system": str(card["system_prompt"]).strip() in system,
            "example": str(card.get("example_prompt") or "").strip() in system if card.get("example_prompt") else None,
            "greeting_sent": (g.strip() in said) if g.strip() else None,
            "never_refuse": bool(_NEVER_REFUSE.search(system)),
            # The chat so far as the player's own turns and the user's, in order.
            "chat": [m["role"] for m in messages[1:]],
        })
    else:
        out.update({
            "persona": str(card["system_prompt"]).strip() in said,
            "turn_headers": sorted(int(k) for k in re.findall(r"Turn (\d+):", said)),
            "anchors": all(a in said for a in ANCHORS),
            "situation": any(s.strip() in said for s in situations),
        })
    return out
