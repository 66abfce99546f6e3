"""The Magentic manager's model calls: task ledgers, progress ledgers and the final answer.

Each call is a small agent that the orchestrator node runs with `NodeContext.invoke_agent`,
so it counts in the run's usage and budget like any model call (one round per call). Its
ledgers stream as `ReasoningDelta` and the final answer as `TextDelta`, both on the Magentic
workflow's own path, not the call's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from raf.adapters.meter import CallMeter
from raf.adapters.structured import ask_json, completion_text
from raf.agent import BaseAgent
from raf.builders.magentic.ledger import (
    ProgressLedger,
    Reading,
    Stall,
    TaskLedger,
    progress_format,
)
from raf.messages import ChatMessage, TextContent
from raf.providers.base import LlmProvider
from raf.run import RunContext
from raf.updates import AgentResponse, MessageCompleted

__all__ = [
    "Briefing",
    "ManagerCall",
    "facts_prompt",
    "final_prompt",
    "plan_prompt",
    "progress_prompt",
    "team_briefing",
]

MANAGER = "manager"
"""The id the manager's calls run under (below the Magentic workflow's path)."""

LEDGER_ATTEMPTS = 3
"""Progress ledgers asked for (each after a correction) before a round counts as a stall."""

TASK_LEDGER = "survey the facts"
UPDATE_LEDGER = "rewrite the fact sheet"
PLAN = "make a plan"
UPDATE_PLAN = "make a new plan"
PROGRESS_LEDGER = "fill in the progress ledger"
FINAL_ANSWER = "write the final answer"
"""Phrases that tell the manager's calls apart (a scripted manager can key on them): the task
ledger is two calls, the facts and then the plan (a re-plan rewrites both)."""


@dataclass(frozen=True, slots=True)
class Briefing:
    """What every manager call is told: the team, the request and the team's work."""

    team: Sequence[tuple[str, str]]
    """(id, description) of each participant."""
    request: Sequence[ChatMessage]
    """The conversation the team works on."""
    transcript: Sequence[ChatMessage]
    """The team's messages (instructions and answers)."""

    def message(self) -> ChatMessage:
        """The request and the transcript as one user message."""
        parts = ["REQUEST:", *(_line(m) for m in self.request if m.text)]
        if self.transcript:
            parts += ["", "TEAM TRANSCRIPT:", *(_line(m) for m in self.transcript)]
        return ChatMessage.user("\n".join(parts))

    def roster(self) -> str:
        return "\n".join(f"- {agent}: {about}" for agent, about in self.team)

    def head(self) -> str:
        return f"You are the manager of a team working on a request. The team:\n{self.roster()}\n"


_HEADINGS = (
    "1. GIVEN OR VERIFIED FACTS: facts and figures the request itself gives (there may be "
    "none).\n"
    "2. FACTS TO LOOK UP: facts to look up, and where exactly they might be found.\n"
    "3. FACTS TO DERIVE: facts to work out by reasoning, computation or simulation.\n"
    "4. EDUCATED GUESSES: what you recall, suspect or can reasonably guess.\n"
    "Facts are specific: names, dates, numbers, statistics."
)


def facts_prompt(briefing: Briefing, ledger: TaskLedger | None, why: str) -> str:
    """The system prompt of the first task-ledger call: the fact sheet (a rewrite when
    `ledger` is the one so far)."""
    if ledger is None:
        return (
            f"{briefing.head()}\nBefore the team starts, {TASK_LEDGER} of the request below. "
            "Answer under these four headings, and nothing else (no plan yet):\n" + _HEADINGS
        )
    return (
        f"{briefing.head()}\nThe task ledger so far:\n{ledger.render_sheets()}\n\n{why}\n"
        f"Now {UPDATE_LEDGER}: keep its four headings, add what the team has learned, move "
        "guesses that were confirmed to the verified facts, and add or revise at least one "
        "educated guess, saying why. Answer with the fact sheet only:\n" + _HEADINGS
    )


def plan_prompt(briefing: Briefing, facts: str, ledger: TaskLedger | None, why: str) -> str:
    """The system prompt of the second task-ledger call: the plan, from the facts."""
    if ledger is None:
        return (
            f"{briefing.head()}\nThe fact sheet:\n{facts}\n\nNow {PLAN} for the request "
            "below: short bullet points saying which team member does what. Not every member "
            "has to take part; involve only those the request needs. Answer with the plan only."
        )
    return (
        f"{briefing.head()}\nThe fact sheet:\n{facts}\n\nThe plan so far:\n{ledger.plan}\n\n"
        f"{why}\nSay in a sentence what went wrong or what must change, then {UPDATE_PLAN}: "
        "short bullet points that get the request done, work around what went wrong and do "
        "not repeat the same mistakes. Involve only the team members above."
    )


def progress_prompt(briefing: Briefing, ledger: TaskLedger) -> str:
    """The system prompt of a progress-ledger call: five questions, each with a reason."""
    names = ", ".join(agent for agent, _ in briefing.team)
    return (
        f"{briefing.head()}\nTASK LEDGER\n{ledger.render_sheets()}\n\n"
        f"Now {PROGRESS_LEDGER} for the request below, answering each question with a reason:\n"
        "- is_request_satisfied: is the request fully and successfully addressed? true only "
        "when it is done; false while any part of it is still open or was not done "
        "successfully.\n"
        "- is_in_loop: is the team going round in circles, repeating the same requests or "
        "getting the same answers as before? A loop can span several rounds.\n"
        "- is_progress_being_made: is the team moving forward? true when it is just starting "
        "or the latest messages add something; false when they show it stuck in a loop or "
        "blocked (say, unable to read something it needs).\n"
        f"- next_speaker: who should act next? (one of: {names})\n"
        "- instruction: what instruction or question do you give that member? Speak to them "
        "directly, and include everything they need to know.\n"
        "Answer with JSON only, exactly this shape:\n"
        '{"is_request_satisfied": {"reason": "...", "answer": true or false}, '
        '"is_in_loop": {"reason": "...", "answer": true or false}, '
        '"is_progress_being_made": {"reason": "...", "answer": true or false}, '
        f'"next_speaker": {{"reason": "...", "answer": "one of: {names}"}}, '
        '"instruction": {"reason": "...", "answer": "..."}}'
    )


def final_prompt(briefing: Briefing, ledger: TaskLedger | None, stopped: str | None) -> str:
    """The system prompt of the final answer (`stopped`: why the team stopped unfinished)."""
    known = "" if ledger is None else f"\nTASK LEDGER\nFACTS:\n{ledger.facts}\n"
    note = (
        ""
        if stopped is None
        else f"\nThe team stopped before finishing: {stopped}. Say so plainly first, then "
        "give the best answer so far."
    )
    return (
        f"You are the manager of a team that worked on a request.{known}\nFrom what the team "
        f"found, {FINAL_ANSWER} to the original request, addressed to the person who "
        f"asked.{note}"
    )


def team_briefing(briefing: Briefing, ledger: TaskLedger, author: str) -> ChatMessage:
    """The task ledger as the participants see it, before the team's work and each
    instruction."""
    text = (
        "We are working on the request above. The team:\n"
        f"{briefing.roster()}\n\nThe fact sheet:\n{ledger.facts}\n\n"
        f"The plan to follow as well as we can:\n{ledger.plan}"
    )
    return ChatMessage(role="user", contents=[TextContent(text=text)], author=author)


class ManagerCall(BaseAgent):
    """One kind of manager call: the facts, the plan, a progress ledger, or the final answer.

    Its messages are the prompt (system and user). The response's value is the fact sheet or
    the plan (text), or the progress ledger (None when the manager wrote no usable one in
    `LEDGER_ATTEMPTS` tries: the orchestrator counts a stall); the final answer is its
    message, authored by the Magentic workflow.
    """

    kind = "manager"

    def __init__(
        self,
        provider: LlmProvider,
        what: Literal["facts", "plan", "progress", "final"],
        *,
        id: str = MANAGER,
        author: str,
        speakers: Sequence[str] = (),
    ) -> None:
        super().__init__(id)
        self._provider = provider
        self._what = what
        self._author = author
        self._speakers = tuple(speakers)
        self._format = progress_format(speakers) if what == "progress" else None

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        """Make the call (for a progress ledger, correcting and asking again, bounded)."""
        meter = CallMeter(ctx, ctx.path[:-1])  # on the workflow's path
        if self._what == "progress":
            ledger = await self._progress(messages, meter)
            return AgentResponse(usage=meter.usage(), value=ledger)
        meter.text = self._what == "final"
        meter.charge()
        text = await completion_text(self._provider, messages, None, on_event=meter.on_event)
        if self._what != "final":
            return AgentResponse(usage=meter.usage(), value=text.strip())
        message = ChatMessage.assistant(text, author=self._author)
        await meter.ctx.emit(MessageCompleted(message=message, path=meter.path))
        return AgentResponse(messages=[message], usage=meter.usage())

    async def _progress(
        self, messages: list[ChatMessage], meter: CallMeter
    ) -> ProgressLedger | Stall:
        answer = await ask_json(
            self._provider,
            messages,
            Reading,
            format=self._format,
            attempts=LEDGER_ATTEMPTS,
            check=lambda reading: reading.problem(self._speakers),
            before_call=meter.charge,
            on_event=meter.on_event,
        )
        if answer.value is None:
            return Stall(problems=answer.problems)
        return answer.value.ledger()


def _line(message: ChatMessage) -> str:
    who = message.author or message.role
    return f"[{who}] {message.text}"
