"""`Budget`: limits on tokens, model calls and seconds for a whole agent tree.

Example:
    >>> from raf import RunOptions
    >>> RunOptions(budget=Budget(tokens=10_000, rounds=20)).budget.rounds
    20
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from raf._options import Options
from raf.errors import AgentPath, BudgetExceeded


class Budget(Options):
    """Limits for a run's whole tree; `None` means unlimited."""

    tokens: int | None = Field(default=None, ge=0)
    """Total input plus output tokens of every model call in the tree."""
    rounds: int | None = Field(default=None, ge=0)
    """Model calls in the tree (ReAct rounds, speaker selection and manager calls included)."""
    seconds: float | None = Field(default=None, gt=0)
    """Wall-clock seconds for the run."""


class BudgetTracker:
    """Counts what a run's tree spends against its `Budget`."""

    __slots__ = ("budget", "rounds", "tokens")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.rounds = 0
        self.tokens = 0

    def charge_round(self, path: AgentPath) -> None:
        """Count one model call made at `path`; raise `BudgetExceeded` past the limit."""
        self.rounds += 1
        limit = self.budget.rounds
        if limit is not None and self.rounds > limit:
            raise self.exceeded("rounds", path)

    def charge_tokens(self, tokens: int, path: AgentPath) -> None:
        """Count `tokens` used at `path`; raise `BudgetExceeded` past the limit."""
        self.tokens += tokens
        limit = self.budget.tokens
        if limit is not None and self.tokens > limit:
            raise self.exceeded("tokens", path)

    def exceeded(self, kind: Literal["rounds", "tokens"], path: AgentPath) -> BudgetExceeded:
        """The `BudgetExceeded` for crossing the `kind` limit at `path`, with what is used."""
        if kind == "rounds":
            limit, used, what = self.budget.rounds, self.rounds, "model calls"
        else:
            limit, used, what = self.budget.tokens, self.tokens, "tokens"
        assert limit is not None
        return BudgetExceeded(
            f"the run's budget of {limit} {what} is spent ({used} used); raise "
            f"Budget({kind}=...) in RunOptions or give the agents less to do",
            kind=kind,
            limit=limit,
            used=used,
            path=path,
        )
