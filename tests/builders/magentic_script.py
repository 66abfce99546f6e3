"""A scripted Magentic manager for the tests: it tells its calls apart by their prompts."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from raf.builders.magentic.manager import (
    FINAL_ANSWER,
    PLAN,
    PROGRESS_LEDGER,
    TASK_LEDGER,
    UPDATE_LEDGER,
    UPDATE_PLAN,
)
from raf.messages import ChatMessage
from raf.testing import Turn, text


def progress(
    speaker: str,
    instruction: str,
    *,
    done: bool = False,
    stalled: bool = False,
) -> dict[str, Any]:
    """A progress ledger as the manager would answer it."""

    def entry(answer: Any) -> dict[str, Any]:
        return {"reason": "scripted", "answer": answer}

    return {
        "is_request_satisfied": entry(done),
        "is_in_loop": entry(stalled),
        "is_progress_being_made": entry(not stalled),
        "next_speaker": entry(speaker),
        "instruction": entry(instruction),
    }


def kind_of(messages: list[ChatMessage]) -> str:
    """Which manager call a request is: task or update (the facts of a new or a rewritten
    ledger), plan or replan (its plan), progress or final."""
    prompt = messages[0].text
    if UPDATE_LEDGER in prompt:
        return "update"
    if TASK_LEDGER in prompt:
        return "task"
    if UPDATE_PLAN in prompt:
        return "replan"
    if PLAN in prompt:
        return "plan"
    if PROGRESS_LEDGER in prompt:
        return "progress"
    assert FINAL_ANSWER in prompt, prompt
    return "final"


@dataclass
class Manager:
    """Plays the manager: ledgers numbered by call, progress ledgers from `rounds` in order.

    `rounds` holds progress ledgers, or functions from the request's messages to one.
    """

    rounds: list[dict[str, Any] | Callable[[list[ChatMessage]], dict[str, Any]]]
    answer: str = "the final answer"
    calls: list[tuple[str, list[ChatMessage]]] = field(default_factory=lambda: [])

    def __call__(self, messages: list[ChatMessage]) -> Turn:
        kind = kind_of(messages)
        self.calls.append((kind, messages))
        if kind in ("task", "update"):
            return text(f"facts {sum(1 for k, _ in self.calls if k in ('task', 'update'))}")
        if kind in ("plan", "replan"):
            return text(f"plan {sum(1 for k, _ in self.calls if k in ('plan', 'replan'))}")
        if kind == "progress":
            step = self.rounds.pop(0)
            ledger = step(messages) if callable(step) else step
            return text(json.dumps(ledger))
        return text(self.answer)

    def kinds(self, *, plans: bool = False) -> list[str]:
        """The calls' kinds in order; a ledger's plan call only with `plans`."""
        return [k for k, _ in self.calls if plans or k not in ("plan", "replan")]

    def prompts(self, kind: str) -> list[str]:
        """System prompt plus briefing of every call of `kind`."""
        return [m[0].text + "\n" + m[-1].text for k, m in self.calls if k == kind]
