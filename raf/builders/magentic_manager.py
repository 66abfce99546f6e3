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

from pydantic import BaseModel

from raf.adapters.meter import CallMeter
from raf.adapters.structured import structured_call
from raf.agent import BaseAgent
from raf.builders.magentic_ledger import ProgressLedger, TaskLedger, progress_format
from raf.errors import SchemaValidationError
from raf.messages import ChatMessage
from raf.providers._checks import check_event
from raf.providers.base import Completion, LlmProvider
from raf.run import RunContext
from raf.updates import AgentResponse, MessageCompleted

__all__ = ["Briefing", "ManagerCall", "final_prompt", "ledger_prompt", "progress_prompt"]

MANAGER = "manager"
"""The id the manager's calls run under (below the Magentic workflow's path)."""

SPEAKER_ATTEMPTS = 3
"""Progress ledgers asked for before a wrong `next_speaker` fails the run."""

TASK_LEDGER = "write the task ledger"
UPDATE_LEDGER = "rewrite the task ledger"
PROGRESS_LEDGER = "fill in the progress ledger"
FINAL_ANSWER = "write the final answer"
"""Phrases that tell the manager's calls apart (a scripted manager can key on them)."""


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


def ledger_prompt(briefing: Briefing, ledger: TaskLedger | None, why: str) -> str:
    """The system prompt of a task-ledger call (a new ledger when `ledger` is None)."""
    head = f"You are the manager of a team working on a request. The team:\n{briefing.roster()}\n"
    shape = 'Answer with JSON only: {"facts": "...", "plan": "..."}.'
    if ledger is None:
        return (
            f"{head}\nBefore the team starts, {TASK_LEDGER}:\n"
            "- facts: what the request gives, what must be looked up, what must be derived, "
            "and educated guesses;\n"
            "- plan: short bullet points saying which team member does what.\n" + shape
        )
    return (
        f"{head}\nThe task ledger so far:\nFACTS:\n{ledger.facts}\nPLAN:\n{ledger.plan}\n\n"
        f"{why}\nNow {UPDATE_LEDGER}: update the facts with what has been learned, and make a "
        "plan that gets the request done (avoiding what went wrong).\n" + shape
    )


def progress_prompt(briefing: Briefing, ledger: TaskLedger) -> str:
    """The system prompt of a progress-ledger call."""
    names = ", ".join(agent for agent, _ in briefing.team)
    return (
        f"You are the manager of a team working on a request. The team:\n{briefing.roster()}\n\n"
        f"TASK LEDGER\nFACTS:\n{ledger.facts}\nPLAN:\n{ledger.plan}\n\n"
        f"Now {PROGRESS_LEDGER}, answering each question with a reason:\n"
        "- is_request_satisfied: is the request fully and successfully addressed? (true/false)\n"
        "- is_in_loop: is the team repeating the same requests or answers? (true/false)\n"
        "- is_progress_being_made: is the team moving forward? (true/false)\n"
        f"- next_speaker: who acts next? (one of: {names})\n"
        "- instruction: what that member should do now (an instruction or a question).\n"
        'Answer with JSON only, each entry {"reason": "...", "answer": ...}.'
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
        f"You are the manager of a team that worked on a request.{known}\nFrom the team's "
        f"work, {FINAL_ANSWER} to the request, addressed to the person who asked.{note}"
    )


class ManagerCall(BaseAgent):
    """One kind of manager call: a task ledger, a progress ledger, or the final answer.

    Its messages are the prompt (system and user); the response's value is the validated
    ledger, or its message the final answer, authored by the Magentic workflow.
    """

    kind = "manager"

    def __init__(
        self,
        provider: LlmProvider,
        what: Literal["task", "progress", "final"],
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
        """Make the call (and, for a progress ledger, ask again for a valid speaker)."""
        meter = CallMeter(ctx, ctx.path[:-1])  # on the workflow's path
        if self._what == "final":
            message = await self._answer(messages, meter)
            return AgentResponse(messages=[message], usage=meter.usage())
        if self._what == "task":
            ledger = await self._ledger(messages, TaskLedger, meter)
        else:
            ledger = await self._progress(messages, meter)
        return AgentResponse(usage=meter.usage(), value=ledger)

    async def _ledger(
        self, messages: list[ChatMessage], schema: type[BaseModel], meter: CallMeter
    ) -> BaseModel:
        meter.charge()
        return await structured_call(
            self._provider, messages, schema, self._format, on_event=meter.on_event
        )

    async def _progress(self, messages: list[ChatMessage], meter: CallMeter) -> ProgressLedger:
        conversation = list(messages)
        for _ in range(SPEAKER_ATTEMPTS):
            ledger = await self._ledger(conversation, ProgressLedger, meter)
            assert isinstance(ledger, ProgressLedger)
            speaker = ledger.next_speaker.answer
            if speaker in self._speakers:
                return ledger
            conversation += [
                ChatMessage.assistant(ledger.model_dump_json()),
                ChatMessage.user(
                    f"next_speaker {speaker!r} is not on the team; answer again with "
                    f"next_speaker one of: {', '.join(self._speakers)}"
                ),
            ]
        raise SchemaValidationError(
            f"the manager ({self._provider.model!r}) named no team member as next_speaker in "
            f"{SPEAKER_ATTEMPTS} progress ledgers (team: {list(self._speakers)}); use a model "
            "that follows the response format, or describe the participants better"
        )

    async def _answer(self, messages: list[ChatMessage], meter: CallMeter) -> ChatMessage:
        meter.charge()
        meter.text = True
        text = ""
        async with self._provider.stream(messages) as events:
            async for event in events:
                check_event(event, self._provider.model, meter.path)
                await meter.on_event(event)
                if isinstance(event, Completion):
                    text = event.text
        message = ChatMessage.assistant(text, author=self._author)
        await meter.ctx.emit(MessageCompleted(message=message, path=meter.path))
        return message


def _line(message: ChatMessage) -> str:
    who = message.author or message.role
    return f"[{who}] {message.text}"
