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

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from raf.adapters.structured import response_format

__all__ = [
    "LedgerAnswer",
    "LedgerChoice",
    "ProgressLedger",
    "Reading",
    "Stall",
    "TaskLedger",
    "progress_format",
]


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

    def render_sheets(self) -> str:
        """The facts and the plan under headings, as the manager's prompts show them."""
        return f"FACTS:\n{self.facts}\nPLAN:\n{self.plan}"


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
    instruction: LedgerChoice = Field(
        validation_alias=AliasChoices("instruction", "instruction_or_question")
    )
    """What that member is asked to do (`instruction_or_question`, the peers' key, is read
    as this too)."""

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


class Stall(BaseModel):
    """No usable progress ledger: what was wrong with each the manager wrote."""

    model_config = ConfigDict(frozen=True)

    problems: list[str]

    def render(self, round: int) -> str:
        """How the stall streams, as a `ReasoningDelta`."""
        why = "; ".join(self.problems) or "no answer"
        return f"Progress ledger, round {round}: none usable, counted as a stall ({why})"


class Reading(BaseModel):
    """A progress ledger as the manager wrote it: only `is_request_satisfied` must be there
    when it is true (the request is done, whoever it names next)."""

    is_request_satisfied: LedgerAnswer
    is_in_loop: LedgerAnswer | None = None
    is_progress_being_made: LedgerAnswer | None = None
    next_speaker: LedgerChoice | None = None
    instruction: LedgerChoice | None = Field(
        default=None, validation_alias=AliasChoices("instruction", "instruction_or_question")
    )

    def problem(self, speakers: Sequence[str]) -> str | None:
        """What keeps this from being a ledger the team can act on (None: nothing)."""
        if self.is_request_satisfied.answer:
            return None
        missing = [name for name in _ENTRIES if getattr(self, name) is None]
        if missing:
            return f"it has no {', '.join(missing)}"
        assert self.next_speaker is not None
        if self.next_speaker.answer not in speakers:
            return (
                f"next_speaker {self.next_speaker.answer!r} is not on the team; name one of: "
                f"{', '.join(speakers)}"
            )
        return None

    def ledger(self) -> ProgressLedger:
        """The ledger, its missing entries filled in when the request is satisfied."""
        done = LedgerAnswer(reason="the request is satisfied", answer=False)
        nobody = LedgerChoice(reason="the request is satisfied", answer="")
        return ProgressLedger(
            is_request_satisfied=self.is_request_satisfied,
            is_in_loop=self.is_in_loop or done,
            is_progress_being_made=self.is_progress_being_made
            or done.model_copy(update={"answer": True}),
            next_speaker=self.next_speaker or nobody,
            instruction=self.instruction or nobody,
        )


_ENTRIES = ("is_in_loop", "is_progress_being_made", "next_speaker", "instruction")


def progress_format(speakers: Sequence[str]) -> dict[str, Any]:
    """The response format of a progress ledger whose `next_speaker` is one of `speakers`."""
    fmt = copy.deepcopy(response_format(ProgressLedger))
    schema = fmt["json_schema"]["schema"]
    choice = copy.deepcopy(schema["$defs"]["LedgerChoice"])
    choice["properties"]["answer"]["enum"] = list(speakers)
    schema["$defs"]["SpeakerChoice"] = choice
    schema["properties"]["next_speaker"] = {"$ref": "#/$defs/SpeakerChoice"}
    return fmt
