"""Termination conditions of a group chat, composed with `|` (either) and `&` (both).

A condition is a pure function of the chat's progress in the current `run()`: it is evaluated
on the run's input and after every speaker, and the chat stops at once when it holds. Text
conditions look at every message added since the last check (all a speaker said, or the
input), not only the last message. Conditions keep no state of their own, so one condition
serves any number of chats and sessions.

Example:
    >>> from raf.messages import ChatMessage
    >>> done = TextMention("DONE") | MaxRounds(5)
    >>> done.is_met(ChatProgress([ChatMessage.assistant("All DONE")], rounds=1, speaker="w"))
    True
    >>> (SpeakerSaid("critic") & TextMention("OK")).is_met(
    ...     ChatProgress([ChatMessage.assistant("OK")], rounds=1, speaker="writer")
    ... )
    False
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from raf.agent import IAgent
from raf.messages import ChatMessage

__all__ = [
    "AllOf",
    "AnyOf",
    "ChatProgress",
    "FunctionCondition",
    "MaxRounds",
    "SpeakerSaid",
    "TerminationCondition",
    "TextMention",
]


@dataclass(frozen=True, slots=True)
class ChatProgress:
    """Where a group chat stands in the current run, as termination conditions see it."""

    transcript: Sequence[ChatMessage]
    """The whole conversation so far, earlier turns of the session included."""
    rounds: int
    """Speakers that spoke in this run."""
    speaker: str | None
    """The id of the last speaker of this run (None before the first)."""
    new: Sequence[ChatMessage] | None = None
    """The messages added since the last check: what the last speaker said, or the run's
    input before the first speaker (None: the last message of `transcript` alone)."""

    @property
    def added(self) -> Sequence[ChatMessage]:
        """`new`, or the last message of the transcript when `new` is None."""
        return self.new if self.new is not None else self.transcript[-1:]


class TerminationCondition(ABC):
    """When a group chat stops; combine conditions with `|` and `&`."""

    __slots__ = ()

    @abstractmethod
    def is_met(self, progress: ChatProgress) -> bool:
        """True when the chat should stop now."""

    def __or__(self, other: TerminationCondition) -> TerminationCondition:
        if not isinstance(other, TerminationCondition):  # pyright: ignore[reportUnnecessaryIsInstance]
            return NotImplemented
        return AnyOf((*_parts(self, AnyOf), *_parts(other, AnyOf)))

    def __and__(self, other: TerminationCondition) -> TerminationCondition:
        if not isinstance(other, TerminationCondition):  # pyright: ignore[reportUnnecessaryIsInstance]
            return NotImplemented
        return AllOf((*_parts(self, AllOf), *_parts(other, AllOf)))


@dataclass(frozen=True, slots=True)
class AnyOf(TerminationCondition):
    """Met when any of `conditions` is (what `a | b` builds)."""

    conditions: tuple[TerminationCondition, ...]
    """The alternatives, in order."""

    def is_met(self, progress: ChatProgress) -> bool:
        """True when one of the conditions holds."""
        return any(c.is_met(progress) for c in self.conditions)


@dataclass(frozen=True, slots=True)
class AllOf(TerminationCondition):
    """Met when all of `conditions` are (what `a & b` builds)."""

    conditions: tuple[TerminationCondition, ...]
    """The conditions that must all hold."""

    def is_met(self, progress: ChatProgress) -> bool:
        """True when every condition holds."""
        return all(c.is_met(progress) for c in self.conditions)


@dataclass(frozen=True, slots=True)
class MaxRounds(TerminationCondition):
    """Met once `n` speakers have spoken in this run.

    Raises:
        ValueError: when `n` is below 1.
    """

    n: int
    """Rounds per run."""

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"MaxRounds needs a count of 1 or more, got {self.n!r}")

    def is_met(self, progress: ChatProgress) -> bool:
        """True when `rounds` reached `n`."""
        return progress.rounds >= self.n


@dataclass(frozen=True, slots=True)
class TextMention(TerminationCondition):
    """Met when a message added since the last check contains `text` (case-sensitive).

    Raises:
        ValueError: when `text` is empty.
    """

    text: str
    """The text to look for, say `"TERMINATE"`."""

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"TextMention needs a non-empty text, got {self.text!r}")

    def is_met(self, progress: ChatProgress) -> bool:
        """True when one of the messages added since the last check mentions `text`."""
        return any(self.text in m.text for m in progress.added)


@dataclass(frozen=True, slots=True, init=False)
class SpeakerSaid(TerminationCondition):
    """Met when the last speaker of this run is the agent `speaker` (an agent or its id)."""

    speaker: str
    """The agent id."""

    def __init__(self, speaker: IAgent | str) -> None:
        object.__setattr__(self, "speaker", speaker if isinstance(speaker, str) else speaker.id)

    def is_met(self, progress: ChatProgress) -> bool:
        """True when `speaker` spoke last."""
        return progress.speaker == self.speaker


@dataclass(frozen=True, slots=True)
class FunctionCondition(TerminationCondition):
    """Met when `fn(transcript)` is true.

    Raises:
        TypeError: when `fn` is not callable.
    """

    fn: Callable[[list[ChatMessage]], bool]
    """`fn(transcript) -> bool`, called with the whole conversation so far."""

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(
                f"FunctionCondition needs a function fn(transcript) -> bool, got {self.fn!r}"
            )

    def is_met(self, progress: ChatProgress) -> bool:
        """True when `fn` says so."""
        return bool(self.fn(list(progress.transcript)))


def _parts(
    condition: TerminationCondition, kind: type[AnyOf] | type[AllOf]
) -> tuple[TerminationCondition, ...]:
    """`condition`'s members when it is already a `kind` (so `a | b | c` is flat)."""
    if type(condition) is kind:
        return condition.conditions
    return (condition,)
