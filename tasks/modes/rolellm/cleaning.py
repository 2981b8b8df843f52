"""RoleLLM's four cleaning rules for generated answers: an answer is dropped when it does not end like a
finished sentence, when it says it is an AI, when it starts with the role's name as a speaker label, or when
it refuses. Each rule returns why it dropped an answer, so the tables say which rule did."""

from __future__ import annotations

import re

_FINAL = tuple(".!?。！？…\"”’')）】」』~～*")
_AI = re.compile(r"\bas an? (?:ai|artificial intelligence|language model|large language model)\b|\bI(?:'m| am) an? "
                 r"(?:ai|artificial intelligence|language model)\b|\bAI (?:language )?model\b|作为(?:一[个名])?"
                 r"(?:人工智能|AI|语言模型)|我是(?:一[个名])?(?:人工智能|AI|语言模型)|我只是(?:一[个名])?(?:人工智能|AI|程序)",
                 re.IGNORECASE)
_REFUSAL = re.compile(r"\bI(?:'m| am) (?:sorry|afraid),? but I (?:can(?:no|')t|won't|am unable)|\bI can(?:no|')t "
                      r"(?:help|assist|answer|provide|comply)|\bI(?:'m| am) (?:not able|unable) to (?:help|answer|"
                      r"provide|assist)|抱歉，?我(?:无法|不能)|我(?:无法|不能)(?:回答|提供|协助)|恕我无法",
                      re.IGNORECASE)


def unclean(answer: str, role: str) -> str | None:
    """Why ``answer`` (spoken by ``role``) is dropped, or None to keep it."""
    text = answer.strip()
    if not text:
        return "empty"
    if not text.endswith(_FINAL):
        return "no final punctuation"
    if _AI.search(text):
        return "reveals an AI identity"
    if re.match(rf"{re.escape(role)}\s*[:：]", text, re.IGNORECASE):
        return "starts with the role's name as a speaker label"
    if _REFUSAL.search(text):
        return "refuses"
    return None
