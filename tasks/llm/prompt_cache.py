"""Where to ask a provider that caches prompt prefixes only at marked points (Anthropic) to cache.

OpenAI caches any repeated prefix of 1,024 tokens or more by itself; Anthropic caches the prompt up to a content
block marked ``cache_control``, and bills tokens written to its cache above the input price and tokens read from
it far below. So a mark pays only where the prefix comes again. The gateway marks:

- a dialogue (a request of several messages): its system message (the character, the scene: the same every turn)
  and its last message, so the next turn, which repeats the whole conversation so far, reads it from the cache;
- a single-message request (a judgment, a question): the prefix it shares with one of the last prompts of the
  same stage and role, when that prefix is long enough to be cached (the scene, profiles and rubric that every
  judgment of an item repeats, before the replies being judged). The message is sent as two text blocks, that
  prefix marked; the text the model reads is the same.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from typing import Any

MIN_PREFIX_CHARS = 4096  # about 1,024 tokens of English: Anthropic's smallest cached prefix
REMEMBERED = 32  # prompts kept per stage and role to find a shared prefix in
EPHEMERAL = {"type": "ephemeral"}


def _common_prefix_len(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share (by halving: slices compare at C speed)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _marked(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "cache_control": EPHEMERAL}]


class PrefixMemory:
    """The last prompts of each stage and role, and the longest prefix a new one shares with them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], deque[str]] = {}

    def shared_prefix(self, key: tuple[str, str], text: str) -> int:
        """The length of the longest prefix ``text`` shares with a remembered prompt (cut back to a line's end,
        so a block ends where a section of the prompt does), or 0 when it is too short to be cached."""
        with self._lock:
            seen = self._seen.setdefault(key, deque(maxlen=REMEMBERED))
            best = max((_common_prefix_len(text, earlier) for earlier in seen), default=0)
            seen.append(text)
        if best >= len(text):  # the very same prompt: the call cache answers it, never the provider
            return 0
        cut = text.rfind("\n", 0, best) + 1 or best
        return cut if cut >= MIN_PREFIX_CHARS else 0


def with_cache_marks(messages: Sequence[dict[str, Any]], memory: PrefixMemory, key: tuple[str, str]
                     ) -> list[dict[str, Any]]:
    """``messages`` with Anthropic's cache marks where a later request will repeat what comes before them."""
    out = [dict(m) for m in messages]
    texts = [m.get("content") if isinstance(m.get("content"), str) else None for m in out]
    if len(out) > 1:
        for i in {0 if out[0].get("role") == "system" else len(out) - 1, len(out) - 1}:
            if texts[i]:
                out[i]["content"] = _marked(str(texts[i]))
        return out
    text = texts[0] if out else None
    if text:
        cut = memory.shared_prefix(key, text)
        if cut:
            out[0]["content"] = [*_marked(text[:cut]), {"type": "text", "text": text[cut:]}]
    return out
