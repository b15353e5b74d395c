"""The cost budget of a states node: checked before every LLM call, shared by all its agents.

Scripts cost $0 and are never stopped by it. Raymond checks after a call and
stops only the agent that overspent; wfexec checks before each call and stops
the whole node (DESIGN §4), so no call starts once the money is spent. Calls
already running when the limit is reached still finish (at most one call per
concurrent agent over the limit).
"""

from __future__ import annotations

from wfexec.protocol.errors import BudgetExceeded


class CostBudget:
    __slots__ = ("limit", "spent")

    def __init__(self, limit: float | None = None, spent: float = 0.0):
        if limit is not None and limit < 0:
            raise ValueError("a cost budget cannot be negative")
        self.limit = limit
        self.spent = spent

    def check(self, agent_id: str, state: str) -> None:
        if self.limit is not None and self.spent >= self.limit:
            raise BudgetExceeded(
                f"{agent_id}: cost budget exceeded before the LLM call for {state}: spent "
                f"${self.spent:.4f} of a ${self.limit:.4f} budget",
                "raise budget_usd, or turn deterministic states into .sh scripts (they cost $0)")

    def add(self, cost: float) -> None:
        if cost:
            self.spent += cost
