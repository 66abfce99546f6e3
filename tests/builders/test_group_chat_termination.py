"""The termination algebra: `|` and `&` over the leaf conditions, against a reference."""

from __future__ import annotations

import functools
import operator

from hypothesis import given

from raf import FunctionCondition, MaxRounds, SpeakerSaid, TerminationCondition, TextMention
from raf.builders import AllOf, AnyOf, ChatProgress
from raf.messages import ChatMessage
from tests.strategies import CondSpec, chat_progress, condition_holds, condition_specs


def build(spec: CondSpec) -> TerminationCondition:
    """The condition `spec` describes, composed with the operators."""
    kind, arg = spec
    if kind in ("or", "and"):
        combine = operator.or_ if kind == "or" else operator.and_
        return functools.reduce(combine, [build(child) for child in arg])
    if kind == "max":
        return MaxRounds(arg)
    if kind == "text":
        return TextMention(arg)
    if kind == "speaker":
        return SpeakerSaid(arg)
    return FunctionCondition(lambda transcript: len(transcript) > arg)


@given(spec=condition_specs(), progress=chat_progress())
def test_composed_conditions_match_the_reference(
    spec: CondSpec, progress: tuple[list[ChatMessage], int, str | None]
) -> None:
    transcript, rounds, speaker = progress
    condition = build(spec)
    state = ChatProgress(transcript, rounds=rounds, speaker=speaker)
    assert condition.is_met(state) == condition_holds(spec, transcript, rounds, speaker)


@given(a=condition_specs(), b=condition_specs(), progress=chat_progress())
def test_operators_are_or_and_and(
    a: CondSpec, b: CondSpec, progress: tuple[list[ChatMessage], int, str | None]
) -> None:
    state = ChatProgress(progress[0], rounds=progress[1], speaker=progress[2])
    left, right = build(a), build(b)
    assert (left | right).is_met(state) == (left.is_met(state) or right.is_met(state))
    assert (left & right).is_met(state) == (left.is_met(state) and right.is_met(state))


def test_chains_stay_flat_and_compare_by_value() -> None:
    a, b, c = MaxRounds(1), TextMention("x"), SpeakerSaid("w")
    assert a | b | c == AnyOf((a, b, c))
    assert a & b & c == AllOf((a, b, c))
    assert (a | b) & c == AllOf((AnyOf((a, b)), c))
    assert a.__or__("x") is NotImplemented  # type: ignore[arg-type]
