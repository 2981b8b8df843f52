"""Chat message lists as the models under test receive them."""

from __future__ import annotations

from typing import Any

Message = dict[str, Any]


def merge_system(messages: list[Message]) -> list[Message]:
    """The same conversation for a model without a system role (Gemma 2, say): the system text goes at the top
    of the first user message, which is marked as the user's so the model can tell instructions from chat."""
    if not messages or messages[0]["role"] != "system":
        return messages
    system, rest = messages[0]["content"], messages[1:]
    if rest and rest[0]["role"] == "user":
        return [{"role": "user", "content": f"{system}\n\nUser: {rest[0]['content']}"}, *rest[1:]]
    return [{"role": "user", "content": system}, *rest]
