"""A spending limit on a run (``--max-cost``) and on a role (``max_cost`` in the models file).

Before a request is sent, the most it can cost is reserved: its prompt at the model's input price, counted high
(a UTF-8 byte for half a token, above what common tokenizers make of text), and ``max_tokens`` of reply at the
output price. A request whose reservation would take what was spent plus what is reserved past a limit is not
sent: the run stops with ``BudgetReached``. When the reply comes, its reservation gives way to its real cost.
So the run never passes its budget, and stops within one request's reservation of it. Calls answered from the
call cache are free, so the same command with a larger budget continues where this one stopped.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import orjson

from rpbench.tasks.core.errors import ModelUnusable


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
                "with a larger budget to continue (no completed call is sent again)")


Prices = tuple[float, float] | None


@dataclass
class _Limit:
    budget: float
    spent: float = 0.0
    reserved: float = 0.0


class Budget:
    """What a run may spend, in total and per role; thread-safe, one per process (``run_budget``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._run: _Limit | None = None
        self._roles: dict[str, _Limit] = {}

    def start(self, budget: float | None) -> None:
        """A run starts: its limit (None for none), nothing spent yet, role limits set as roles are used."""
        with self._lock:
            self._run = _Limit(budget) if budget is not None else None
            self._roles = {}

    def active(self, role_budget: float | None) -> bool:
        return self._run is not None or role_budget is not None

    def reserve(self, role: str, model: str, role_budget: float | None, prices: Prices,
                messages: list[dict[str, object]], max_tokens: int) -> float:
        """Reserve the most a request can cost, or raise ``BudgetReached`` (sending nothing)."""
        if prices is None:
            raise ModelUnusable(role, model, "its price is unknown, so it cannot run under a budget (give "
                                "input_cost_per_token and output_cost_per_token for it in the models file)")
        prompt_tokens = len(orjson.dumps(messages)) / 2
        most = prices[0] * prompt_tokens + prices[1] * max_tokens
        with self._lock:
            limits: list[tuple[str, _Limit]] = []
            if self._run is not None:
                limits.append(("the run's", self._run))
            if role_budget is not None:
                limits.append((f"role {role}'s", self._roles.setdefault(role, _Limit(role_budget))))
            for scope, limit in limits:
                if limit.spent + limit.reserved + most > limit.budget:
                    raise BudgetReached(scope, limit.spent, limit.budget, role, model)
            for _scope, limit in limits:
                limit.reserved += most
        return most

    def settle(self, role: str, reserved: float, cost: float | None) -> None:
        """A reserved request ended: its reservation goes, its real cost (None: not billed) is spent."""
        with self._lock:
            for limit in [self._run, self._roles.get(role)]:
                if limit is not None:
                    limit.reserved -= reserved
                    limit.spent += cost or 0.0


run_budget = Budget()


def start_run_budget(budget: float | None) -> None:
    """A run starts with ``budget`` (None: none). A function, not the object, is what flows refer to: whatever
    pickles a flow (Dask ships its context to workers) pickles a function by name, but an object (and its lock)
    by value."""
    run_budget.start(budget)
