"""What a RoleLLM request carries, as facts, and the stand-in model both runs are answered by.

RoleLLM's public repository holds no code; its README points to the authors' OpenCompass integration
(``configs/datasets/rolebench``: a system message with the role's name and description, the question as the
user's message, 512 tokens, scored by Rouge-L against each question's first reference, Chinese through jieba).
OpenCompass (0.5.4 from PyPI) ran those configurations once against the loopback server answering with
``responder``, on rpbench's shipped RoleBench sample (instruction generalization, English and Chinese); ``facts``
turned each request into the facts kept in ``tests/data/rolellm_release_requests.json``, beside the Rouge-L
OpenCompass reported for those answers. ``tests/test_release_facts.py`` runs rpbench on the same questions
against the same stand-in and compares requests and scores. No prompt text is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def responder(body: Mapping[str, Any]) -> str:
    """An answer made of the question and a catchphrase (some overlap with every reference, never all)."""
    question = str(body["messages"][-1]["content"])
    return f"{question} 稳住。" if any("\u4e00" <= ch <= "\u9fff" for ch in question) else f"{question} Steady as she goes."


def facts(body: Mapping[str, Any], role: str, description: str, question: str) -> dict[str, Any]:
    messages = body["messages"]
    system = str(messages[0]["content"]) if messages[0]["role"] == "system" else ""
    return {
        "question": question, "roles": [m["role"] for m in messages],
        "role_name": role in system, "description": description.strip() in system,
        "user_is_the_question": str(messages[-1]["content"]) == question,
        "max_tokens": body.get("max_tokens"), "temperature": body.get("temperature"), "top_p": body.get("top_p"),
        "also_sent": sorted(k for k, v in body.items()
                            if k not in {"model", "messages", "max_tokens", "temperature", "top_p", "stream"}
                            and v is not None and v is not False),
    }
