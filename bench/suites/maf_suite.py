"""Microsoft Agent Framework: `Agent`s on a zero-latency chat client, composed by its builders.

The chat client is a `BaseChatClient` subclass composed with the same layers as the
framework's own clients (function invocation, chat middleware, telemetry); it streams one text
update and one usage update. Workflows come from agent-framework-orchestrations'
`SequentialBuilder` / `ConcurrentBuilder` with `output_from="all"`, so every participant's
token reaches the consumer as it is produced (as in raf), and are consumed through
`workflow.as_agent().run(..., stream=True)` followed by `get_final_response()`.

A built MAF workflow refuses concurrent runs, so scenario C builds one workflow per session
(before the clock starts; the five agents are shared).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from bench.suites.base import (
    INSTRUCTIONS,
    PROMPT,
    TOKEN,
    Checkpointed,
    Outcome,
    PreparedRun,
    Run,
    Unavailable,
    now,
)

try:
    from agent_framework import (
        Agent,
        BaseChatClient,
        ChatMiddlewareLayer,
        ChatResponse,
        ChatResponseUpdate,
        Content,
        FunctionInvocationLayer,
        Message,
        UsageDetails,
    )
    from agent_framework.observability import ChatTelemetryLayer
    from agent_framework_orchestrations import ConcurrentBuilder, SequentialBuilder
except ImportError as exc:
    raise Unavailable(f"Microsoft Agent Framework is not installed: {exc}") from exc


class ZeroLatencyChatClient(
    FunctionInvocationLayer[Any],
    ChatMiddlewareLayer[Any],
    ChatTelemetryLayer[Any],
    BaseChatClient[Any],
):
    """Answers `TOKEN` at once: one streamed text update, then usage."""

    def __init__(self) -> None:
        super().__init__()
        self.largest_input = 0
        self.stamp = 0.0

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Any:
        conversation = sum(1 for m in messages if m.role != "system")
        if conversation > self.largest_input:
            self.largest_input = conversation
        inputs = len(messages)
        if stream:
            return self._build_response_stream(self._updates(inputs))
        return self._whole(inputs)

    async def _updates(self, inputs: int) -> AsyncIterator[ChatResponseUpdate]:
        self.stamp = now()
        yield ChatResponseUpdate(role="assistant", contents=[Content.from_text(TOKEN)])
        usage = UsageDetails(input_token_count=inputs, output_token_count=1)
        yield ChatResponseUpdate(
            role="assistant", contents=[Content.from_usage(usage)], finish_reason="stop"
        )

    async def _whole(self, inputs: int) -> ChatResponse:
        return ChatResponse(messages=[Message(role="assistant", contents=[TOKEN])])


async def _consume(agent: Any) -> Outcome:
    tokens = 0
    stream = agent.run(PROMPT, stream=True)
    async for update in stream:
        if update.text == TOKEN:
            tokens += 1
    final = await stream.get_final_response()
    replies = sum(1 for m in final.messages if m.role == "assistant")
    return Outcome(tokens, replies)


class MafSuite:
    """Microsoft Agent Framework's side of every scenario."""

    name = "maf"
    modules = ("agent_framework", "agent_framework_orchestrations")

    def __init__(self) -> None:
        self.model = ZeroLatencyChatClient()

    def version(self) -> str:
        from importlib.metadata import version

        core = version("agent-framework-core")
        return f"agent-framework-core {core}, orchestrations {version('agent-framework-orchestrations')}"

    def details(self) -> dict[str, str]:
        return {
            "leaf": "Agent on a BaseChatClient subclass (function/middleware/telemetry layers)",
            "stream": "workflow.as_agent().run(prompt, stream=True), output_from='all'",
        }

    def _agent(self, name: str) -> Any:
        return Agent(client=self.model, instructions=INSTRUCTIONS, name=name)

    def _sequential(self, name: str, participants: Sequence[Any]) -> Any:
        workflow = SequentialBuilder(name=name, participants=participants, output_from="all")
        return workflow.build().as_agent(name=name)

    async def chain(self, agents: int) -> Run:
        workflow = self._sequential("chain", [self._agent(f"agent{i}") for i in range(agents)])
        return lambda: _consume(workflow)

    async def fan_out(self, agents: int) -> Run:
        participants = [self._agent(f"agent{i}") for i in range(agents)]
        workflow = ConcurrentBuilder(name="fan_out", participants=participants, output_from="all")
        agent = workflow.build().as_agent(name="fan_out")

        async def run() -> Outcome:
            outcome = await _consume(agent)
            # The final response holds each participant's reply and the aggregated copies.
            return Outcome(outcome.tokens - agents, outcome.replies - agents)

        return run

    async def sessions(self, sessions: int, agents: int) -> Run:
        import anyio

        participants = [self._agent(f"agent{i}") for i in range(agents)]
        workflows: list[Any] = []

        async def prepare() -> None:
            workflows[:] = [self._sequential("chain", participants) for _ in range(sessions)]

        async def run() -> Outcome:
            outcomes: list[Outcome] = []

            async def one(workflow: Any) -> None:
                outcomes.append(await _consume(workflow))

            async with anyio.create_task_group() as tg:
                for workflow in workflows:
                    tg.start_soon(one, workflow)
            workflows.clear()
            return Outcome(sum(o.tokens for o in outcomes), sum(o.replies for o in outcomes))

        return PreparedRun(prepare, run)

    async def nested(self, depth: int) -> Callable[[], Awaitable[float]]:
        agent = self._agent("leaf")
        for level in range(depth):
            agent = self._sequential(f"level{level}", [agent])
        model = self.model

        async def run() -> float:
            latency = 0.0
            async for update in agent.run(PROMPT, stream=True):
                if update.text == TOKEN:
                    latency = now() - model.stamp
            return latency

        return run

    async def checkpointed(self, agents: int, directory: str) -> Checkpointed:
        raise Unavailable(
            "agent-framework-core ships in-memory and file checkpoint storage, no SQLite"
        )
