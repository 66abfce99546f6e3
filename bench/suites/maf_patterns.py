"""Microsoft Agent Framework's handoff and group-chat workloads (scenarios H and I).

Handoff: agent-framework-orchestrations' `HandoffBuilder`, routes declared one way along the
chain, `Agent`s (with `require_per_service_call_history_persistence=True`, which its handoff
requires) on a zero-latency client that streams the token and calls `handoff_to_<next>`; a
termination condition ends the turn once the last agent answered (otherwise the workflow asks
the user for more). A built MAF handoff workflow serves one conversation, so each timed run
gets a fresh build (made before the clock starts).

Group chat: `GroupChatBuilder` with a round-robin `selection_func`, `max_rounds`, and
`output_from="all"` so every participant's token reaches the consumer. MAF's participants are
handed at most the last 8 messages of the conversation (raf hands the whole one), which the
report's `largest_input` shows.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator
from typing import Any

from agent_framework import Agent, ChatResponseUpdate, Content, Message, UsageDetails
from agent_framework_orchestrations import GroupChatBuilder, HandoffBuilder

from bench.patterns import PatternRun
from bench.suites.base import INSTRUCTIONS, PROMPT, TOKEN, Outcome, PreparedRun, now
from bench.suites.maf_suite import MafSuite, ZeroLatencyChatClient

# Each build warns that the chain's last agent cannot hand off, and each chat that it reached
# max_rounds: both are what these workloads do.
for _name in ("agent_framework", "agent_framework_orchestrations"):
    logging.getLogger(_name).setLevel(logging.ERROR)


class HandingOffClient(ZeroLatencyChatClient):
    """Streams `TOKEN` and, when it has a target, a call of its handoff tool; then usage."""

    def __init__(self, target: str | None) -> None:
        super().__init__()
        self._tool = None if target is None else f"handoff_to_{target}"
        self._calls = 0

    async def _updates(self, inputs: int) -> AsyncIterator[ChatResponseUpdate]:
        self.stamp = now()
        contents = [Content.from_text(TOKEN)]
        if self._tool is not None:
            self._calls += 1
            call = Content.from_function_call(
                call_id=f"call_{self._calls}", name=self._tool, arguments="{}"
            )
            contents.append(call)
        yield ChatResponseUpdate(role="assistant", contents=contents)
        usage = UsageDetails(input_token_count=inputs, output_token_count=1)
        yield ChatResponseUpdate(
            role="assistant", contents=[Content.from_usage(usage)], finish_reason="stop"
        )


async def _consume(agent: Any, speakers: set[str]) -> Outcome:
    tokens = 0
    stream = agent.run(PROMPT, stream=True)
    async for update in stream:
        if update.text == TOKEN:
            tokens += 1
    final = await stream.get_final_response()
    messages: list[Message] = final.messages
    replies = sum(1 for m in messages if m.role == "assistant" and m.author_name in speakers)
    return Outcome(tokens, replies)


async def handoff(suite: MafSuite, agents: int) -> PatternRun:
    ids = [f"agent{i}" for i in range(agents)]
    clients = [HandingOffClient(nxt) for nxt in [*ids[1:], None]]
    chain = [
        Agent(
            client=client,
            instructions=INSTRUCTIONS,
            name=agent_id,
            require_per_service_call_history_persistence=True,
        )
        for agent_id, client in zip(ids, clients, strict=True)
    ]
    speakers = set(ids)

    def answered(conversation: list[Message]) -> bool:
        return sum(1 for m in conversation if m.role == "assistant") >= agents

    def build() -> Any:
        builder = HandoffBuilder(name="desk", participants=chain, termination_condition=answered)
        for source, target in itertools.pairwise(chain):
            builder.add_handoff(source, [target])
        return builder.with_start_agent(chain[0]).build().as_agent(name="desk")

    built: list[Any] = []

    async def prepare() -> None:
        built[:] = [build()]

    async def run() -> Outcome:
        if not built:
            await prepare()
        return await _consume(built.pop(), speakers)

    return PatternRun(
        PreparedRun(prepare, run), lambda: max(client.largest_input for client in clients)
    )


async def group_chat(suite: MafSuite, members: int, rounds: int) -> PatternRun:
    participants = [
        Agent(client=suite.model, instructions=INSTRUCTIONS, name=f"member{i}")
        for i in range(members)
    ]
    names = [p.name or "" for p in participants]

    def round_robin(state: Any) -> str:
        return names[state.current_round % members]

    def build() -> Any:
        workflow = GroupChatBuilder(
            name="room",
            participants=participants,
            selection_func=round_robin,
            max_rounds=rounds,
            output_from="all",
        )
        return workflow.build().as_agent(name="room")

    built: list[Any] = []

    async def prepare() -> None:
        built[:] = [build()]

    async def run() -> Outcome:
        if not built:
            await prepare()
        return await _consume(built.pop(), set(names))

    return PatternRun(PreparedRun(prepare, run), lambda: suite.model.largest_input)
