"""Vote policies: how ballots decide a winner, and when the outcome can no longer change.

Each voter weighs 1 (or its weight under `weighted`); the tally sums the weights per choice.
Ties go to the tied choice of the earliest voter in participant order; `judge(agent)` sends
ties and low agreement (no choice with more than half) to a judge agent instead.

Example:
    >>> policy = plurality()
    >>> count(policy, {"a": "tea", "b": "coffee", "c": "tea"}, ["a", "b", "c"]).winner
    'tea'
    >>> settled(policy, {"a": "tea", "b": "tea"}, ["c"], ["a", "b", "c"])
    True
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from raf.agent import IAgent

__all__ = [
    "Outcome",
    "PolicyKind",
    "VotePolicy",
    "count",
    "judge",
    "majority",
    "plurality",
    "settled",
    "unanimous",
    "weighted",
]

PolicyKind = Literal["majority", "plurality", "unanimous", "weighted", "judge"]
"""The kinds of vote policy."""


@dataclass(frozen=True, slots=True)
class VotePolicy:
    """How a vote decides; make one with `majority()`, `plurality()`, `unanimous()`,
    `weighted({...})` or `judge(agent)`."""

    kind: PolicyKind
    """Which rule decides."""
    weights: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    """Voter weights (`weighted` only; a voter not listed weighs 1)."""
    judge: IAgent | None = None
    """The agent that settles ties and low agreement (`judge` only)."""

    def weight(self, voter: str) -> float:
        """The weight of `voter`'s ballot."""
        return self.weights.get(voter, 1.0)


def majority() -> VotePolicy:
    """The choice with more than half of the valid ballots wins; otherwise there is no winner."""
    return VotePolicy("majority")


def plurality() -> VotePolicy:
    """The choice with the most ballots wins (a tie: the earliest voter's tied choice)."""
    return VotePolicy("plurality")


def unanimous() -> VotePolicy:
    """A choice wins only when every valid ballot names it."""
    return VotePolicy("unanimous")


def weighted(weights: Mapping[str, float]) -> VotePolicy:
    """Plurality with each voter's ballot weighing `weights[voter_id]` (1 when not listed).

    Raises:
        ValueError: a weight that is negative or not a finite number.
        TypeError: `weights` is not a mapping of voter ids to numbers.
    """
    if not isinstance(weights, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"weighted() takes a mapping {{voter_id: weight}}, got {weights!r}")
    checked: dict[str, float] = {}
    for voter, weight in weights.items():
        if isinstance(weight, bool) or not isinstance(weight, int | float):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"weighted(): the weight of {voter!r} is {weight!r}; pass a number")
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(
                f"weighted(): the weight of {voter!r} is {weight!r}; weights are finite and >= 0"
            )
        checked[voter] = float(weight)
    return VotePolicy("weighted", MappingProxyType(checked))


def judge(agent: IAgent) -> VotePolicy:
    """A majority wins; a tie or low agreement (no choice with more than half) goes to `agent`.

    The judge gets the question and every ballot, and answers with the winning choice (a
    ballot, or plain text).

    Raises:
        TypeError: when `agent` is not an `IAgent`.
    """
    from raf.agent import IAgent

    if not isinstance(agent, IAgent):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"judge() takes the judge agent (an IAgent), got {agent!r}")
    return VotePolicy("judge", judge=agent)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a policy makes of the ballots."""

    winner: str | None
    """The winning choice, or None."""
    tally: dict[str, float]
    """Summed weight per choice, in the order choices were first named."""
    needs_judge: bool = False
    """The policy's judge must decide (a tie or low agreement)."""
    reason: str = ""
    """Why there is no winner (empty when there is one)."""


def count(policy: VotePolicy, choices: Mapping[str, str | None], order: Sequence[str]) -> Outcome:
    """Apply `policy` to the voters' `choices` (None: abstained); `order` is participant order."""
    valid = [(voter, choices[voter]) for voter in order if choices.get(voter) is not None]
    tally: dict[str, float] = {}
    for voter, choice in valid:
        assert choice is not None
        tally[choice] = tally.get(choice, 0.0) + _weight(policy, voter)
    if not valid:
        return Outcome(None, tally, reason="no valid ballot")
    kind = policy.kind
    if kind == "unanimous":
        if len(tally) == 1:
            return Outcome(next(iter(tally)), tally)
        return Outcome(None, tally, reason=f"the ballots disagree ({len(tally)} choices)")
    leader = _leader(tally, valid)
    if kind in ("plurality", "weighted"):
        return Outcome(leader, tally)
    total = sum(tally.values())
    if 2 * tally[leader] > total:
        return Outcome(leader, tally)
    if kind == "judge":
        return Outcome(None, tally, needs_judge=True, reason="no choice has more than half")
    return Outcome(None, tally, reason="no choice has more than half of the ballots")


def settled(
    policy: VotePolicy,
    choices: Mapping[str, str | None],
    outstanding: Collection[str],
    order: Sequence[str],
) -> bool:
    """True when no ballots of the `outstanding` voters could change the outcome of `choices`.

    Sound, not complete: it may say False where the outcome is in fact fixed, never True
    where it is not. A judge's decision is never known in advance, so under `judge` only a
    certain majority settles the vote early.
    """
    if not outstanding:
        return True
    kind = policy.kind
    if kind == "unanimous":
        # Two different choices: no unanimity, whatever comes.
        named = {choice for choice in choices.values() if choice is not None}
        return len(named) > 1
    now = count(policy, choices, order)
    rest = sum(_weight(policy, voter) for voter in outstanding)
    tally = now.tally
    total = sum(tally.values())
    if kind in ("majority", "judge"):
        best = max(tally.values(), default=0.0)
        if tally and 2 * best > total + rest:
            return True  # a majority even if everyone left votes against it
        # No choice can reach a majority even if everyone left votes for it (a new one too).
        return kind == "majority" and 2 * (max(best, 0.0) + rest) <= total + rest
    leader = now.winner
    if leader is None:
        return False
    lead = tally[leader]
    first = _first_voter(leader, choices, order)
    position = {voter: i for i, voter in enumerate(order)}
    earliest_rest = min(position[voter] for voter in outstanding)
    # Each rival (a new choice among them, with no voters yet) gets everything left.
    rivals: list[tuple[float, int]] = [(0.0, len(order))]
    for choice, weight in tally.items():
        if choice != leader:
            rivals.append((weight, position[_first_voter(choice, choices, order)]))
    for weight, rival_first in rivals:
        reach = weight + rest
        if reach > lead:
            return False
        if reach == lead and not position[first] < min(rival_first, earliest_rest):
            return False
    return True


def _weight(policy: VotePolicy, voter: str) -> float:
    return policy.weight(voter) if policy.kind == "weighted" else 1.0


def _leader(tally: Mapping[str, float], valid: Sequence[tuple[str, str | None]]) -> str:
    """The choice with the most weight; a tie goes to the earliest voter's tied choice."""
    best = max(tally.values())
    tied = {choice for choice, weight in tally.items() if weight == best}
    return next(choice for _, choice in valid if choice in tied)  # pyright: ignore[reportReturnType]


def _first_voter(choice: str, choices: Mapping[str, str | None], order: Sequence[str]) -> str:
    return next(voter for voter in order if choices.get(voter) == choice)
