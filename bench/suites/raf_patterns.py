"""raf's handoff and group-chat workloads (scenarios H and I), on zero-latency fake models.

Handoff: `ReactAgent`s whose fake model streams the token and calls `handoff_to_<next>` (the
last one answers), routes declared one way along the chain. Group chat: `ReactAgent`s on the
suite's `ZeroLatencyProvider`, `round_robin()`, `MaxRounds`. Both are consumed through
`async with agent.run(prompt, Session()) as stream`.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from bench.patterns import PatternRun
from bench.suites.base import INSTRUCTIONS, PROMPT, TOKEN, Outcome, PlayedCall
from bench.suites.raf_suite import RafSuite
from raf import GroupChatBuilder, HandoffBuilder, MaxRounds, ReactAgent, Session, round_robin
from raf.agent import IAgent
from raf.messages import ChatMessage, ToolCallContent
from raf.providers.base import (
    Completion,
    ProviderEvent,
    TextChunk,
    ToolCallDelta,
    ToolCallStarted,
    UsageReport,
)


class _Inputs:
    """The largest conversation any of the models was handed."""

    def __init__(self) -> None:
        self.largest = 0


class HandingOff:
    """An `LlmProvider` answering `TOKEN` and, when it has a target, a call of its handoff tool."""

    def __init__(self, inputs: _Inputs, target: str | None) -> None:
        self._inputs = inputs
        self._tool = None if target is None else f"handoff_to_{target}"

    @property
    def model(self) -> str:
        """The model name."""
        return "zero-latency-handoff"

    def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Any] = (),
        response_format: dict[str, Any] | None = None,
    ) -> _Answer:
        """One call; see `raf.providers.base.LlmProvider.stream`."""
        conversation = sum(1 for m in messages if m.role != "system")
        if conversation > self._inputs.largest:
            self._inputs.largest = conversation
        return _Answer(self._tool, len(messages))


class _Answer(PlayedCall[ProviderEvent]):
    __slots__ = ("_inputs", "_tool")

    def __init__(self, tool: str | None, inputs: int) -> None:
        self._tool = tool
        self._inputs = inputs
        self._events = None

    async def _play(self) -> AsyncGenerator[ProviderEvent]:
        yield TextChunk(TOKEN)
        calls: list[ToolCallContent] = []
        if self._tool is not None:
            yield ToolCallStarted("call_1", self._tool)
            yield ToolCallDelta("call_1", "{}")
            calls.append(ToolCallContent(call_id="call_1", name=self._tool, arguments="{}"))
        yield UsageReport(self._inputs, 1)
        yield Completion(text=TOKEN, tool_calls=calls, input_tokens=self._inputs, output_tokens=1)


async def _consume(agent: IAgent) -> Outcome:
    """Run once through the stream; count tokens, then the replies (assistant text messages)."""
    tokens = 0
    run = agent.run(PROMPT, Session())
    async with run as stream:
        async for update in stream:
            if update.type == "text_delta" and update.text == TOKEN:
                tokens += 1
    response = run.response
    messages = response.messages if response is not None else []
    return Outcome(tokens, sum(1 for m in messages if m.role == "assistant" and m.text == TOKEN))


async def handoff(suite: RafSuite, agents: int) -> PatternRun:
    inputs = _Inputs()
    ids = [f"agent{i}" for i in range(agents)]
    chain = [
        ReactAgent(agent_id, HandingOff(inputs, nxt), INSTRUCTIONS)
        for agent_id, nxt in zip(ids, [*ids[1:], None], strict=True)
    ]
    builder = HandoffBuilder(chain[0], id="desk").with_max_handoffs(agents)
    for agent in chain[1:]:
        builder.add_agent(agent)
    for source, target in itertools.pairwise(chain):
        builder.add_handoff(source, [target])
    desk = builder.build().as_agent()
    return PatternRun(lambda: _consume(desk), lambda: inputs.largest)


async def group_chat(suite: RafSuite, members: int, rounds: int) -> PatternRun:
    builder = GroupChatBuilder(id="room").with_selector(round_robin())
    for i in range(members):
        builder.add_agent(ReactAgent(f"member{i}", suite.model, INSTRUCTIONS))
    room = builder.with_termination(MaxRounds(rounds)).with_max_rounds(rounds).build().as_agent()
    model = suite.model
    return PatternRun(lambda: _consume(room), lambda: model.largest_input)


__all__ = ["group_chat", "handoff"]
