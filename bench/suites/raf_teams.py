"""raf's Magentic and vote workloads (scenarios J and K), on zero-latency fake models.

Magentic: `ReactAgent` participants on the suite's `ZeroLatencyProvider`; the manager is a
zero-latency fake that answers each call at once: a task ledger, then progress ledgers that
alternate between the participants until they have answered `rounds` times, then the final
answer (`TOKEN`). Vote: `ReactAgent` voters on the suite's provider, `unanimous()` (they all
answer `TOKEN`, so every ballot is needed). Both are consumed through
`async with agent.run(prompt, Session()) as stream`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from types import TracebackType
from typing import Any

from bench.suites.base import INSTRUCTIONS, PROMPT, TOKEN, Outcome
from bench.suites.raf_suite import RafSuite
from bench.teams import TeamRun
from raf import MagenticBuilder, ReactAgent, Session, VoteBuilder, unanimous
from raf.agent import IAgent
from raf.builders.magentic_manager import FINAL_ANSWER, PROGRESS_LEDGER
from raf.messages import ChatMessage
from raf.providers.base import Completion, ProviderEvent, TextChunk, UsageReport


def _entry(answer: object) -> dict[str, object]:
    return {"reason": "-", "answer": answer}


class ManagerModel:
    """A zero-latency manager: ledgers prepared up front, chosen by the prompt and the
    number of answers in the team's transcript."""

    def __init__(self, members: Sequence[str], rounds: int) -> None:
        self._ledger = json.dumps({"facts": "-", "plan": "-"})
        self._progress = [
            json.dumps(
                {
                    "is_request_satisfied": _entry(done >= rounds),
                    "is_in_loop": _entry(False),
                    "is_progress_being_made": _entry(True),
                    "next_speaker": _entry(members[done % len(members)]),
                    "instruction": _entry("go on"),
                }
            )
            for done in range(rounds + 1)
        ]
        self._answered = f"] {TOKEN}"

    @property
    def model(self) -> str:
        """The model name."""
        return "zero-latency-manager"

    def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Any] = (),
        response_format: dict[str, Any] | None = None,
    ) -> _Answer:
        """One call; see `raf.providers.base.LlmProvider.stream`."""
        prompt = messages[0].text
        if FINAL_ANSWER in prompt:
            return _Answer(TOKEN, len(messages))
        if PROGRESS_LEDGER in prompt:
            answers = messages[-1].text.count(self._answered)
            return _Answer(self._progress[answers], len(messages))
        return _Answer(self._ledger, len(messages))


class _Answer:
    __slots__ = ("_events", "_inputs", "_text")

    def __init__(self, text: str, inputs: int) -> None:
        self._text = text
        self._inputs = inputs
        self._events: AsyncGenerator[ProviderEvent] | None = None

    async def __aenter__(self) -> AsyncIterator[ProviderEvent]:
        self._events = self._play()
        return self._events

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._events is not None:
            await self._events.aclose()

    async def _play(self) -> AsyncGenerator[ProviderEvent]:
        yield TextChunk(self._text)
        yield UsageReport(self._inputs, 1)
        yield Completion(text=self._text, input_tokens=self._inputs, output_tokens=1)


async def _consume(agent: IAgent) -> Outcome:
    """Run once through the stream; count tokens, then the answers (assistant text messages)."""
    tokens = 0
    run = agent.run(PROMPT, Session())
    async with run as stream:
        async for update in stream:
            if update.type == "text_delta" and update.text == TOKEN:
                tokens += 1
    response = run.response
    messages = response.messages if response is not None else []
    return Outcome(tokens, sum(1 for m in messages if m.role == "assistant" and m.text == TOKEN))


async def magentic(suite: RafSuite, members: int, rounds: int) -> TeamRun:
    ids = [f"member{i}" for i in range(members)]
    builder = MagenticBuilder(ManagerModel(ids, rounds), id="team")
    for member in ids:
        builder.add_agent(ReactAgent(member, suite.model, INSTRUCTIONS))
    team = builder.with_limits(max_rounds=rounds + 1).build().as_agent()
    model = suite.model
    return TeamRun(lambda: _consume(team), lambda: model.largest_input)


async def vote(suite: RafSuite, voters: int) -> TeamRun:
    builder = VoteBuilder(id="panel").with_policy(unanimous())
    for i in range(voters):
        builder.add_agent(ReactAgent(f"voter{i}", suite.model, INSTRUCTIONS))
    panel = builder.build().as_agent()
    model = suite.model
    return TeamRun(lambda: _consume(panel), lambda: model.largest_input)


__all__ = ["magentic", "vote"]
