"""`Budget`: limits on tokens, model calls and seconds for a whole agent tree.

Example:
    >>> from raf import RunOptions
    >>> RunOptions(budget=Budget(tokens=10_000, rounds=20)).budget.rounds
    20
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from raf.errors import AgentPath, BudgetExceeded, format_path


class Budget(BaseModel):
    """Limits for a run's whole tree; `None` means unlimited."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    tokens: int | None = Field(default=None, ge=0)
    """Total input plus output tokens of every model call in the tree."""
    rounds: int | None = Field(default=None, ge=0)
    """Model calls in the tree (ReAct rounds, speaker selection and manager calls included)."""
    seconds: float | None = Field(default=None, gt=0)
    """Wall-clock seconds for the run."""


class BudgetTracker:
    """Counts what a subtree spends against its `Budget`, and its parent's."""

    __slots__ = ("budget", "parent", "rounds", "tokens")

    def __init__(self, budget: Budget, parent: BudgetTracker | None = None) -> None:
        self.budget = budget
        self.parent = parent
        self.rounds = 0
        self.tokens = 0

    def charge_round(self, path: AgentPath) -> None:
        """Count one model call made at `path`; raise `BudgetExceeded` past the limit."""
        tracker: BudgetTracker | None = self
        while tracker is not None:
            tracker.rounds += 1
            limit = tracker.budget.rounds
            if limit is not None and tracker.rounds > limit:
                raise BudgetExceeded(
                    f"round budget of {limit} model calls exceeded by {format_path(path)!r}",
                    kind="rounds",
                    limit=limit,
                    used=tracker.rounds,
                    path=path,
                )
            tracker = tracker.parent

    def charge_tokens(self, tokens: int, path: AgentPath) -> None:
        """Count `tokens` used at `path`; raise `BudgetExceeded` past the limit."""
        tracker: BudgetTracker | None = self
        while tracker is not None:
            tracker.tokens += tokens
            limit = tracker.budget.tokens
            if limit is not None and tracker.tokens > limit:
                raise BudgetExceeded(
                    f"token budget of {limit} exceeded by {format_path(path)!r} "
                    f"({tracker.tokens} used)",
                    kind="tokens",
                    limit=limit,
                    used=tracker.tokens,
                    path=path,
                )
            tracker = tracker.parent
