"""A plan of what a command would spend (``--plan``): the command's flows run with every request that is not in
the call cache answered by a stand-in (``stand_in``) instead of being sent, and each request is counted here.

For each stage, role and model: the calls the cache answers (free), the calls that would be sent, their prompt
tokens (litellm's count for OpenAI's models, an estimate with the same tokenizer for others, the embedded
model's own tokenizer for it), their reply tokens and their cost. The figures that depend on replies are ranges:

- calls and prompt tokens: low, every reply read at its first attempt (as the stand-ins are); high, every reply
  needing every attempt the retry policy allows (``parse_attempts``), its prompt sent again each time;
- reply tokens: low, the mean of this stage's replies already in the cache, or where there is none the length of
  the stand-in (about the least a usable reply takes); high, ``max_tokens`` for every attempt;
- dollars: the low and high tokens at the model's prices (``prices`` is given by the gateway).

A dialogue that may end early is counted both ways: the command runs once with stand-ins that decline every
offer to end (the high figures) and, where any such offer was seen (an option named END in a schema, or a
request's ``ends`` reply), once more with stand-ins that take the first (the low figures: calls, tokens and
dollars; a stage only the longer run reaches has a low of 0).
"""

from __future__ import annotations

import hashlib
import re
import threading
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rpbench.tasks.core.errors import ModelUnusable

Prices = tuple[float, float] | None
Range = float | list[float]


@dataclass
class _Row:
    stage: str
    role: str
    model: str
    counted_by: str = ""
    prices: Prices = None
    cached: int = 0
    sent: int = 0  # requests the run would send (each once, however many items ask the same)
    attempts: int = 1  # the most attempts a reply may take (the retry policy's parse_attempts)
    prompt_tokens: int = 0
    stand_in_reply_tokens: int = 0
    most_reply_tokens: int = 0  # max_tokens, summed over the requests sent
    cached_reply_tokens: int = 0
    cached_replies: int = 0
    unreadable: int = 0  # stand-ins the stage could not read (what came after them may be undercounted)
    sent_as: str = ""  # for a role that batches: "batch", or "interactive" in a stage that waits on each reply
    cacheable_prompt_tokens: int = 0  # in a prefix of 1,024 tokens or more sent earlier in the run (see below)

    def reply_low(self) -> float:
        if self.cached_replies:
            return self.sent * self.cached_reply_tokens / self.cached_replies
        return float(self.stand_in_reply_tokens)

    def figures(self) -> dict[str, Any]:
        k = self.attempts
        calls = _span(self.sent, self.sent * k)
        prompt = _span(self.prompt_tokens, self.prompt_tokens * k)
        reply = _span(round(self.reply_low()), self.most_reply_tokens * k)
        cost: Range | None = None
        floor: float | None = None
        if self.prices is not None:
            p_in, p_out = self.prices
            cost = _span(round(p_in * self.prompt_tokens + p_out * self.reply_low(), 6),
                         round(k * (p_in * self.prompt_tokens + p_out * self.most_reply_tokens), 6))
            # The least these calls can cost whatever the replies: the prompts, and one token of reply each.
            floor = round(p_in * self.prompt_tokens + p_out * self.sent, 6)
        return {"stage": self.stage, "role": self.role, "model": self.model, "calls": calls,
                "cached_calls": self.cached, "prompt_tokens": prompt, "reply_tokens": reply, "cost_usd": cost,
                "cost_floor_usd": floor,
                "cacheable_prompt_tokens": self.cacheable_prompt_tokens,
                "cacheable_share": round(self.cacheable_prompt_tokens / self.prompt_tokens, 4)
                if self.prompt_tokens else 0.0,
                "tokens_counted_by": self.counted_by,
                "price": "unknown" if self.prices is None else f"{self.prices[0]:.3g} / {self.prices[1]:.3g} USD "
                         "per prompt / reply token",
                **({"sent_as": self.sent_as} if self.sent_as else {}),
                **({"unreadable_stand_ins": self.unreadable} if self.unreadable else {})}


def _span(low: float, high: float) -> Range:
    return low if low == high else [low, high]


def _add(a: Range | None, b: Range | None) -> Range | None:
    if a is None or b is None:
        return None
    lo = (a[0] if isinstance(a, list) else a) + (b[0] if isinstance(b, list) else b)
    hi = (a[1] if isinstance(a, list) else a) + (b[1] if isinstance(b, list) else b)
    return _span(round(lo, 6), round(hi, 6))


# Providers bill a repeated prompt prefix at a fraction of the price once it is long enough: OpenAI from 1,024
# tokens, in steps of 128 beyond (Anthropic's smallest cached block is of the same order, marked by cache_control).
CACHE_MIN, CACHE_STEP = 1024, 128


def prefix_digests(ids: Sequence[int]) -> list[tuple[int, bytes]]:
    """(length, digest) of each prefix a provider could find in its cache: 1,024 tokens, then every 128 more."""
    out, h = [], hashlib.sha256()
    for start in range(0, len(ids) - len(ids) % CACHE_STEP, CACHE_STEP):
        h.update(array("l", ids[start:start + CACHE_STEP]).tobytes())
        if start + CACHE_STEP >= CACHE_MIN:
            out.append((start + CACHE_STEP, h.copy().digest()))
    return out


def prompt_ids(messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """The request's tokens in order (cl100k_base over its messages, each after its role): close enough to a
    provider's own tokens to say which prefixes repeat."""
    import litellm

    text = "".join(f"<{m.get('role')}>\n{m.get('content') or ''}\n" for m in messages)
    return list(litellm.encode(model="gpt-4o-mini", text=text))


_OPENAI_NAMES = re.compile(r"^(gpt-|o\d|chatgpt-|text-|davinci|babbage)")


def count_prompt_tokens(model: str, family: str, messages: Sequence[Mapping[str, Any]]) -> tuple[int, str]:
    """The request's prompt tokens, and what counted them."""
    if family == "local":
        from rpbench.tasks.llm.local.tokens import count_tokens

        # The embedded model's own tokenizer, plus a few tokens per message for its chat template's markers.
        texts = [str(m.get("content") or "") for m in messages]
        return sum(count_tokens(texts)) + 4 * len(texts), "the embedded model's tokenizer"
    import litellm

    name = model.rsplit("/", 1)[-1]
    if family == "openai" and _OPENAI_NAMES.match(name):
        return int(litellm.token_counter(model=name, messages=list(messages))), "litellm's count"
    # litellm would fetch some models' tokenizers from the Hugging Face Hub; an estimate, said to be one.
    return int(litellm.token_counter(model="gpt-4o-mini", messages=list(messages))), "estimate (cl100k_base)"


def count_reply_tokens(text: str) -> int:
    import litellm

    return int(litellm.token_counter(model="gpt-4o-mini", text=text, count_response_tokens=True))


class PlanPassedBudget(ModelUnusable):
    """The calls a plan counted so far cost more, at the least, than the budget it is checked against: the plan
    stops there (a model that cannot be used under that budget, as the gateway stops for any such model)."""

    def __init__(self, floor: float) -> None:
        super().__init__("", "", f"the least the calls counted so far can cost, ${floor:.4f}, is past the budget")
        self.args = (floor,)
        self.floor = floor


class CallPlan:
    """A plan being made: the requests a run would send, counted from stand-in replies; thread-safe. A run is
    a plan when its ``RunContext`` holds one."""

    def __init__(self, floor_limit: float | None = None) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str, str], _Row] = {}
        self._answered: dict[str, dict[str, Any]] = {}  # stand-ins given, by cache key: the same request is sent once
        self._prefixes: dict[str, set[bytes]] = {}  # by model: prefixes of the prompts counted so far
        self.ending = False  # stand-ins take every offer to end (the shortest dialogues)
        self.endings_offered = 0  # stand-ins whose schema offered to end something
        self._longest: dict[tuple[str, str, str], _Row] | None = None
        # A budget the plan is checked against as it is made (``--max-cost``): once the least the calls counted so
        # far can cost passes it, the plan stops (``PlanPassedBudget``), for a refusal comes in seconds, not after
        # a whole suite was planned.
        self.floor_limit = floor_limit
        self.floor = 0.0
        self.passed: float | None = None  # the least cost counted when the plan passed ``floor_limit``
        # A single request whose most (its prompt and its role's max_tokens of reply) is past ``floor_limit``: the
        # run could never send it under that budget. (role, model, its most, max_tokens) of the first found.
        self.too_costly: tuple[str, str, float, int] | None = None

    def start(self, ending: bool = False) -> None:
        """A new plan; or, with ``ending``, the second pass of this one: the rows counted so far are kept as
        its high figures, and this pass, its dialogues ended at the first offer, gives the low ones."""
        with self._lock:
            self._longest = self._rows if ending else None
            self._rows, self._answered, self._prefixes = {}, {}, {}
            self.ending, self.endings_offered, self.floor = ending, 0, 0.0
            if not ending:
                self.passed, self.too_costly = None, None

    def _row(self, stage: str, role: str, model: str) -> _Row:
        key = (stage, role, model)
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = _Row(stage, role, model)
        return row

    def from_cache(self, stage: str, role: str, model: str, reply: Mapping[str, Any], prices: Prices) -> None:
        with self._lock:
            row = self._row(stage, role, model)
            row.cached += 1
            row.prices = prices
            if reply.get("completion_tokens") is not None and not reply.get("stand_in"):
                row.cached_replies += 1
                row.cached_reply_tokens += int(reply["completion_tokens"])

    def stand_in(self, stage: str, role: str, model: str, family: str, key: str,
                 messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any] | None, max_tokens: int,
                 prices: Prices, attempts: int, sent_as: str = "", ends: str | None = None) -> dict[str, Any]:
        """The stand-in reply to a request not in the cache, counted as a request the run would send (once:
        the same request again is answered as the run's cache would answer it)."""
        from rpbench.tasks.llm.stand_in import offers_ending, stand_in_text

        with self._lock:
            given = self._answered.get(key)
        if given is not None:
            self.from_cache(stage, role, model, given, prices)
            return given
        prompt, counted_by = count_prompt_tokens(model, family, messages)
        prefixes = prefix_digests(prompt_ids(messages)) if family != "local" and prompt >= CACHE_MIN else []
        text = ends if ends is not None and self.ending else stand_in_text(messages, schema, self.ending)
        if ends is not None or (schema is not None and offers_ending(schema)):
            with self._lock:
                self.endings_offered += 1
        reply_tokens = min(count_reply_tokens(text), max_tokens)
        reply = {"text": text, "prompt_tokens": prompt, "completion_tokens": reply_tokens, "latency_s": 0.0,
                 "cost_usd": None, "stand_in": True}
        with self._lock:
            if key in self._answered:  # the same request, counted meanwhile by another caller
                self._row(stage, role, model).cached += 1
                return self._answered[key]
            self._answered[key] = reply
            row = self._row(stage, role, model)
            row.sent += 1
            row.counted_by, row.prices, row.attempts, row.sent_as = counted_by, prices, max(1, attempts), sent_as
            row.prompt_tokens += prompt
            seen = self._prefixes.setdefault(model, set())
            row.cacheable_prompt_tokens += max((n for n, d in prefixes if d in seen), default=0)
            seen.update(d for _, d in prefixes)
            row.stand_in_reply_tokens += reply_tokens
            row.most_reply_tokens += max_tokens
            if prices is not None:  # the least this call can cost: its prompt and one token of reply
                self.floor += prices[0] * prompt + prices[1]
                most = prices[0] * prompt + prices[1] * max_tokens
                # (A budget the least cost passes already is refused for that, the broader reason.)
                if (self.floor_limit is not None and most > self.floor_limit >= self.floor
                        and self.too_costly is None):
                    self.too_costly = (role, model, most, max_tokens)
            passed = self.passed is not None or self.too_costly is not None or (
                self.floor_limit is not None and self.floor > self.floor_limit)
        if passed:  # (and every call after it, in whichever flow: the plan stops)
            self.passed = self.passed or self.floor
            raise PlanPassedBudget(self.passed)
        return reply

    def unreadable(self, stage: str, role: str, model: str) -> None:
        with self._lock:
            self._row(stage, role, model).unreadable += 1

    def counted(self) -> int:
        """Requests counted so far in this pass (sent or answered from the cache): for a plan's progress line."""
        with self._lock:
            return sum(r.sent + r.cached for r in self._rows.values())

    def result(self) -> dict[str, Any]:
        """The plan: a row per stage, role and model, the totals by role, and the run's ``total``."""
        with self._lock:
            longest = self._rows if self._longest is None else self._longest
            shortest = None if self._longest is None else self._rows
            rows = [r.figures() if shortest is None else _lowered(r.figures(), shortest.get(key))
                    for key, r in sorted(longest.items())]
        keys = ("calls", "cached_calls", "prompt_tokens", "reply_tokens", "cost_usd", "cost_floor_usd",
                "cacheable_prompt_tokens")
        roles: dict[str, dict[str, Any]] = {}
        total: dict[str, Any] = {k: 0 for k in keys}
        for row in rows:
            by_role = roles.setdefault(row["role"], {"role": row["role"], "models": [], **{k: 0 for k in keys}})
            if row["model"] not in by_role["models"]:
                by_role["models"].append(row["model"])
            for k in keys:
                by_role[k] = _add(by_role[k], row[k])
                total[k] = _add(total[k], row[k])
        low_prompt = _lo(total["prompt_tokens"]) or 0
        total["cacheable_share"] = round(total["cacheable_prompt_tokens"] / low_prompt, 4) if low_prompt else 0.0
        unknown = sorted({r["model"] for r in rows if r["cost_usd"] is None})
        notes = []
        if unknown:
            notes.append(f"no known price for {', '.join(unknown)}: its cost is left out of the totals (give "
                         "input_cost_per_token and output_cost_per_token in the models file)")
        if any("estimate" in r["tokens_counted_by"] for r in rows):
            notes.append("prompt tokens of models whose tokenizer litellm does not know offline are estimated "
                         "with cl100k_base")
        waiting = sorted({f"{r['role']} in {r['stage']}" for r in rows if r.get("sent_as") == "interactive"})
        if waiting:
            notes.append(f"sent one by one although their role batches (each call waits on a reply before it): "
                         f"{', '.join(waiting)}")
        unread = sum(r.get("unreadable_stand_ins", 0) for r in rows)
        if unread:
            notes.append(f"{unread} stand-in replies could not be read by their stage: what would follow a real "
                         "reply there is not counted")
        if unknown and rows:
            total["cost_usd"] = _sum_known([r["cost_usd"] for r in rows])
            total["cost_floor_usd"] = _sum_known([r["cost_floor_usd"] for r in rows])
        return {"stages": rows, "roles": list(roles.values()), "total": total, "notes": notes}


def _lo(value: Range | None) -> float | None:
    return None if value is None else (value[0] if isinstance(value, list) else value)


def _hi(value: Range | None) -> float | None:
    return None if value is None else (value[1] if isinstance(value, list) else value)


def _lowered(figures: dict[str, Any], shortest: _Row | None) -> dict[str, Any]:
    """A row's figures with their low ends (and what could be cached of them) taken from the pass whose
    dialogues ended first (``shortest``: the same row there, None when that pass never reached it)."""
    low = shortest.figures() if shortest is not None else None
    for k in ("calls", "prompt_tokens", "reply_tokens", "cost_usd"):
        high = _hi(figures[k])
        if high is None:
            continue
        least = _lo(low[k]) if low is not None else 0
        least = least if least is not None else 0
        # Counts stay whole numbers (a row the shorter pass never reached has a low of 0, not 0.0).
        figures[k] = _span(int(least), int(high)) if k in ("calls", "prompt_tokens", "reply_tokens") else \
            _span(least, high)
    if figures.get("cost_floor_usd") is not None:
        figures["cost_floor_usd"] = low["cost_floor_usd"] if low is not None else 0.0
    # What could be cached is counted, like the low figures, in the shorter pass ("of the low count").
    figures["cacheable_prompt_tokens"] = low["cacheable_prompt_tokens"] if low is not None else 0
    figures["cacheable_share"] = low["cacheable_share"] if low is not None else 0.0
    return figures


def _sum_known(costs: Sequence[Range | None]) -> Range:
    out: Range = 0
    for c in costs:
        if c is not None:
            out = _add(out, c) or 0
    return out
