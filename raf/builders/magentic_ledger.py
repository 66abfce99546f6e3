"""The Magentic-One ledgers: the task ledger (facts, plan) and each round's progress ledger.

Example:
    >>> ledger = TaskLedger(facts="- the tank holds 50 l", plan="- calc: divide by 7")
    >>> print(ledger.render())
    Task ledger
    Facts:
    - the tank holds 50 l
    Plan:
    - calc: divide by 7
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from raf.adapters.structured import response_format

__all__ = ["LedgerAnswer", "LedgerChoice", "ProgressLedger", "TaskLedger", "progress_format"]


class TaskLedger(BaseModel):
    """What the manager knows and means to do: the facts and the plan."""

    model_config = ConfigDict(frozen=True)

    facts: str
    """Given or verified facts, facts to look up, facts to derive, and educated guesses."""
    plan: str
    """The plan: which team member does what."""

    def render(self) -> str:
        """The ledger as text (how it streams, as a `ReasoningDelta`)."""
        return f"Task ledger\nFacts:\n{self.facts}\nPlan:\n{self.plan}"


class LedgerAnswer(BaseModel):
    """A yes-or-no answer of the progress ledger, with its reason."""

    model_config = ConfigDict(frozen=True)

    reason: str
    answer: bool


class LedgerChoice(BaseModel):
    """A text answer of the progress ledger, with its reason."""

    model_config = ConfigDict(frozen=True)

    reason: str
    answer: str


class ProgressLedger(BaseModel):
    """The manager's assessment after each round, and who speaks next."""

    model_config = ConfigDict(frozen=True)

    is_request_satisfied: LedgerAnswer
    """Is the request fully and successfully addressed?"""
    is_in_loop: LedgerAnswer
    """Is the team repeating itself?"""
    is_progress_being_made: LedgerAnswer
    """Is the team moving forward?"""
    next_speaker: LedgerChoice
    """The team member to act next (one of the participants' ids)."""
    instruction: LedgerChoice
    """What that member is asked to do."""

    @property
    def stalled(self) -> bool:
        """The team loops or makes no progress."""
        return self.is_in_loop.answer or not self.is_progress_being_made.answer

    def render(self, round: int) -> str:
        """The ledger as text (how it streams, as a `ReasoningDelta`)."""
        lines = [f"Progress ledger, round {round}"]
        for name in ("is_request_satisfied", "is_in_loop", "is_progress_being_made"):
            entry: LedgerAnswer = getattr(self, name)
            lines.append(f"{name}: {entry.answer} ({entry.reason})")
        lines.append(f"next_speaker: {self.next_speaker.answer} ({self.next_speaker.reason})")
        lines.append(f"instruction: {self.instruction.answer}")
        return "\n".join(lines)


def progress_format(speakers: Sequence[str]) -> dict[str, Any]:
    """The response format of a progress ledger whose `next_speaker` is one of `speakers`."""
    fmt = copy.deepcopy(response_format(ProgressLedger))
    schema = fmt["json_schema"]["schema"]
    choice = copy.deepcopy(schema["$defs"]["LedgerChoice"])
    choice["properties"]["answer"]["enum"] = list(speakers)
    schema["$defs"]["SpeakerChoice"] = choice
    schema["properties"]["next_speaker"] = {"$ref": "#/$defs/SpeakerChoice"}
    return fmt
