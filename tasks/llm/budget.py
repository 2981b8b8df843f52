"""A spending limit on a run (``--max-cost``) and on a role (``max_cost`` in the models file).

Before a request is sent, the most it can cost is reserved: its prompt at the model's input price, counted high
(a UTF-8 byte for half a token, above what common tokenizers make of text), and ``max_tokens`` of reply at the
output price. A request is sent when what was spent, plus what the requests in flight may still cost, plus its
own most fits the budget. When it does not, it waits for requests in flight to settle (a reply gives its
reservation back and spends its real cost, usually far less); only when nothing is in flight and it still does
not fit does the run stop, with ``BudgetReached``. So the run never passes its budget, and stops within one
request's reservation of it, not within the reservations of every request in flight. Calls answered from the
call cache are free, so the same command with a larger budget continues where this one stopped.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

import orjson

from rpbench.tasks.core.errors import ModelUnusable
from rpbench.tasks.llm.config import role_shown


class BudgetReached(ModelUnusable):
    """The next request could take the spend past a budget: the run stops here (exit 3, Failed in Prefect)."""

    def __init__(self, scope: str, spent: float, budget: float, role: str = "", model: str = "") -> None:
        super().__init__(role, model, f"{scope} budget reached", None)
        self.args = (scope, spent, budget, role, model)  # what a worker process's pickle rebuilds it from
        self.scope, self.spent, self.budget = scope, spent, budget

    def __str__(self) -> str:
        option = "--max-cost" if self.scope == "the run's" else f"max_cost for role {self.role} in the models file"
        return (f"budget reached: ${self.spent:.4f} spent, and the next request could take {self.scope} spend past "
                f"its budget of ${self.budget:.4f} ({option}); everything answered is kept: run the same command "
                "with a larger budget to continue (no completed call is sent again; --plan says what finishing "
                "costs)")


Prices = tuple[float, float] | None


def most_cost(prices: tuple[float, float], messages: list[dict[str, object]], max_tokens: int) -> float:
    """The most a request can cost: its prompt counted high (a UTF-8 byte for half a token) and a full reply."""
    return prices[0] * len(orjson.dumps(messages)) / 2 + prices[1] * max_tokens


@dataclass
class _Limit:
    budget: float
    spent: float = 0.0
    reserved: float = 0.0
    # Reservations not yet settled. Whether anything is in flight is read from this count, never from ``reserved``:
    # a sum of floats that went up and down by the same amounts may end at 6.5e-18, not 0, and a request waiting
    # for that "money in flight" to be freed would wait for ever.
    holding: int = 0


class Budget:
    """What a run may spend, in total (``budget``; None for no limit) and per role (limits set as roles are
    used); thread-safe. One per run, in its ``RunContext``."""

    def __init__(self, budget: float | None = None) -> None:
        self._lock = threading.Lock()
        self._run: _Limit | None = _Limit(budget) if budget is not None else None
        self._roles: dict[str, _Limit] = {}
        self._reached: BudgetReached | None = None  # a budget this run reached: nothing more starts

    def active(self, role_budget: float | None) -> bool:
        return self._run is not None or role_budget is not None

    def try_reserve(self, role: str, model: str, role_budget: float | None, most: float) -> float | None:
        """Reserve ``most`` (the most a request, or a batch, can cost); None when it does not fit yet but requests
        in flight may free room; ``BudgetReached`` when nothing is in flight and it does not fit."""
        with self._lock:
            limits: list[tuple[str, _Limit]] = []
            if self._run is not None:
                limits.append(("the run's", self._run))
            if role_budget is not None:
                limits.append((f"role {role}'s", self._roles.setdefault(role, _Limit(role_budget))))
            if self._reached is not None:
                # The run is stopping: no request may start now, even one small enough to fit, for it could be
                # answered after the run ends and never stored (a rerun would pay for it again).
                raise self._reached
            for scope, limit in limits:
                if limit.spent + limit.reserved + most > limit.budget:
                    if limit.holding > 0:
                        return None  # what is in flight may settle below its reservation: wait for it
                    self._reached = BudgetReached(scope, limit.spent, limit.budget, role, model)
                    raise self._reached
            for _scope, limit in limits:
                limit.reserved += most
                limit.holding += 1
        return most

    async def reserve(self, role: str, model: str, role_budget: float | None, prices: Prices,
                      messages: list[list[dict[str, object]]], max_tokens: int, poll_s: float = 0.02) -> float:
        """Reserve the most the requests ``messages`` (one request's, or a batch's) can cost together, waiting
        while requests in flight may still free room; ``BudgetReached`` once nothing is in flight and they still
        do not fit. A model with no known price cannot run under a budget."""
        from rpbench.tasks.llm.stopping import gate

        if prices is None:
            raise ModelUnusable(role_shown(role), model, "its price is unknown, so it cannot run under a budget (give "
                                "input_cost_per_token and output_cost_per_token for it in the models file)")
        most = sum(most_cost(prices, m, max_tokens) for m in messages)
        while True:
            got = self.try_reserve(role, model, role_budget, most)
            if got is not None:
                return got
            await asyncio.sleep(poll_s)
            await gate()  # a run stopped meanwhile sends nothing more

    def state(self) -> dict[str, float] | None:
        """The run's budget, what it spent and what is reserved now (None without a run budget)."""
        with self._lock:
            if self._run is None:
                return None
            return {"budget": self._run.budget, "spent": self._run.spent, "reserved": self._run.reserved}

    def settle(self, role: str, reserved: float, cost: float | None) -> None:
        """A reserved request ended: its reservation goes, its real cost (None: not billed) is spent. Called once
        for every reservation made, whatever it came to (a free model's is 0)."""
        with self._lock:
            for limit in [self._run, self._roles.get(role)]:
                if limit is not None:
                    limit.holding -= 1
                    # Nothing in flight: nothing reserved, exactly (the sum's rounding left behind goes with it).
                    limit.reserved = limit.reserved - reserved if limit.holding > 0 else 0.0
                    limit.spent += cost or 0.0
