"""Vote policies against a reference tally, and early decisions that never change the outcome."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raf.builders.vote.policy import (
    Outcome,
    VotePolicy,
    count,
    judge,
    majority,
    plurality,
    settled,
    unanimous,
    weighted,
)
from raf.function_agent import FunctionAgent

VOTERS = [f"v{i}" for i in range(6)]
CHOICES = ["red", "green", "blue"]

JUDGE = judge(FunctionAgent("judge", lambda m: "red"))


@st.composite
def policies(draw: st.DrawFn) -> VotePolicy:
    kind = draw(st.sampled_from(["majority", "plurality", "unanimous", "weighted", "judge"]))
    if kind == "weighted":
        weights = draw(st.dictionaries(st.sampled_from(VOTERS), st.integers(0, 4)))
        return weighted(weights)
    return {"majority": majority(), "plurality": plurality(), "unanimous": unanimous()}.get(
        kind, JUDGE
    )


ballots = st.lists(st.one_of(st.none(), st.sampled_from(CHOICES)), min_size=1, max_size=6)


def reference(policy: VotePolicy, votes: list[str | None]) -> tuple[str | None, bool]:
    """The winner (and whether the judge must decide), computed the plain way."""
    cast = [(VOTERS[i], c) for i, c in enumerate(votes) if c is not None]
    weight = {
        v: Fraction(policy.weights.get(v, 1)) if policy.kind == "weighted" else 1 for v, _ in cast
    }
    totals: dict[str, Fraction] = {}
    for voter, choice in cast:
        totals[choice] = totals.get(choice, Fraction(0)) + weight[voter]
    if not totals:
        return None, False
    if policy.kind == "unanimous":
        return (next(iter(totals)), False) if len(totals) == 1 else (None, False)
    best = max(totals.values())
    earliest = min(i for i, c in enumerate(votes) if c is not None and totals[c] == best)
    leader = votes[earliest]
    if policy.kind in ("plurality", "weighted"):
        return leader, False
    if best * 2 > sum(totals.values()):
        return leader, False
    return None, policy.kind == "judge"


@given(policy=policies(), votes=ballots)
def test_the_winner_matches_a_reference_tally(policy: VotePolicy, votes: list[str | None]) -> None:
    order = VOTERS[: len(votes)]
    outcome = count(policy, dict(zip(order, votes, strict=True)), order)
    assert (outcome.winner, outcome.needs_judge) == reference(policy, votes)
    cast = [c for c in votes if c is not None]
    assert set(outcome.tally) == set(cast)
    if policy.kind != "weighted":
        assert sum(outcome.tally.values()) == len(cast)


@given(policy=policies(), votes=ballots, data=st.data())
def test_a_settled_vote_cannot_change(
    policy: VotePolicy, votes: list[str | None], data: st.DataObject
) -> None:
    order = VOTERS[: len(votes)]
    outstanding = data.draw(st.sets(st.sampled_from(order), max_size=3))
    known = {v: c for v, c in zip(order, votes, strict=True) if v not in outstanding}
    if not settled(policy, known, sorted(outstanding), order):
        return
    now = count(policy, known, order)
    # Every way the outstanding voters could vote (a new choice, or abstaining, too).
    for completion in itertools.product([None, *CHOICES, "new"], repeat=len(outstanding)):
        full = {**known, **dict(zip(sorted(outstanding), completion, strict=True))}
        final = count(policy, full, order)
        assert (final.winner, final.needs_judge) == (now.winner, now.needs_judge), full


def test_early_decisions_that_are_certain_are_seen() -> None:
    order = ["a", "b", "c", "d", "e"]
    three = {"a": "x", "b": "x", "c": "x"}
    assert settled(majority(), three, ["d", "e"], order)
    assert settled(plurality(), three, ["d", "e"], order)
    assert not settled(unanimous(), three, ["d", "e"], order)
    assert settled(unanimous(), {"a": "x", "b": "y"}, ["c", "d", "e"], order)
    # A tie the earliest voter wins is settled; one a later voter's choice could win is not.
    assert settled(plurality(), {"a": "x", "b": "x", "c": "y"}, ["d"], order)
    assert not settled(plurality(), {"b": "x", "c": "x", "d": "y"}, ["a"], order)
    assert not settled(JUDGE, {"a": "x", "b": "y"}, ["c"], order)
    assert settled(weighted({"a": 5}), {"a": "x"}, ["b", "c", "d", "e"], order)


def test_ties_go_to_the_earliest_voter_in_participant_order() -> None:
    order = ["a", "b", "c", "d"]
    outcome = count(plurality(), {"d": "x", "c": "y", "b": "y", "a": "x"}, order)
    assert outcome == Outcome("x", {"x": 2.0, "y": 2.0})
    assert count(weighted({"a": 0.5}), {"a": "x", "b": "y"}, order).winner == "y"
    assert count(majority(), {"a": "x", "b": "y"}, order).winner is None
    assert count(JUDGE, {"a": "x", "b": "y"}, order).needs_judge


def test_policies_check_their_arguments() -> None:
    with pytest.raises(ValueError, match="finite and >= 0"):
        weighted({"a": -1})
    with pytest.raises(TypeError, match="pass a number"):
        weighted({"a": "heavy"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="IAgent"):
        judge("gpt-4o")  # type: ignore[arg-type]
