"""raf: `ReactAgent` leaves on a zero-latency fake `LlmProvider`, composed with the builders.

The fake provider answers every call with one `TextChunk`, a `UsageReport` and the
`Completion`, and never calls a tool. Until `raf.ReactAgent` exists the leaves are
`FunctionAgent`s asking the same fake model (one text delta and the completed message).
Every workload is consumed through `async with agent.run(...) as stream`.
"""

from __future__ import annotations

import importlib
import itertools
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from bench.suites.base import (
    INSTRUCTIONS,
    PROMPT,
    TOKEN,
    Checkpointed,
    Outcome,
    PlayedCall,
    Run,
    Unavailable,
    conversation_size,
    now,
)

try:
    from raf.agent import IAgent, Session
    from raf.function_agent import FunctionAgent
    from raf.messages import ChatMessage
    from raf.providers.base import Completion, ProviderEvent, TextChunk, UsageReport
except ImportError as exc:  # the harness reports the framework as missing
    raise Unavailable(f"raf is not importable: {exc}") from exc


def _find(name: str, *modules: str) -> Any:
    """`name` from the first of `modules` that has it, or raise `Unavailable`."""
    for module in modules:
        try:
            imported = importlib.import_module(module)
        except ImportError:
            continue
        found = getattr(imported, name, None)
        if found is not None:
            return found
    raise Unavailable(f"{name} is not available in raf yet (looked in {', '.join(modules)})")


class ZeroLatencyProvider:
    """An `LlmProvider` that answers `TOKEN` at once: one text chunk, usage, completion."""

    def __init__(self) -> None:
        self.largest_input = 0
        self.stamp = 0.0

    @property
    def model(self) -> str:
        """The model name."""
        return "zero-latency"

    def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Any] = (),
        response_format: dict[str, Any] | None = None,
    ) -> _Answer:
        """One call; see `raf.providers.base.LlmProvider.stream`."""
        conversation = conversation_size(messages, _is_system)
        if conversation > self.largest_input:
            self.largest_input = conversation
        return _Answer(self, len(messages), self.reply(messages))

    def reply(self, messages: Sequence[ChatMessage]) -> str:
        """The text of the answer to `messages` (`TOKEN`; a fake manager answers otherwise)."""
        return TOKEN


class _Answer(PlayedCall[ProviderEvent]):
    """The async context manager of one fake call."""

    __slots__ = ("_inputs", "_provider", "_text")

    def __init__(self, provider: ZeroLatencyProvider, inputs: int, text: str) -> None:
        self._provider = provider
        self._inputs = inputs
        self._text = text
        self._events = None

    async def _play(self) -> AsyncGenerator[ProviderEvent]:
        self._provider.stamp = now()
        yield TextChunk(self._text)
        yield UsageReport(self._inputs, 1)
        yield Completion(
            text=self._text, input_tokens=self._inputs, output_tokens=1, finish_reason="stop"
        )


class RafSuite:
    """raf's side of every scenario."""

    name = "raf"
    modules = ("raf",)

    def __init__(self) -> None:
        self.model = ZeroLatencyProvider()
        self._react: Any = None
        try:
            self._react = _find("ReactAgent", "raf", "raf.react")
        except Unavailable:
            self._react = None

    def version(self) -> str:
        from importlib.metadata import version

        return f"raf {version('raf')}"

    def details(self) -> dict[str, str]:
        leaf = "ReactAgent" if self._react is not None else "FunctionAgent (ReactAgent missing)"
        try:
            _find("SequentialBuilder", "raf", "raf.builders")
            _find("ConcurrentBuilder", "raf", "raf.builders")
            composition = "SequentialBuilder / ConcurrentBuilder"
        except Unavailable:
            composition = "raf.engine.WorkflowBuilder graphs (the builders are missing)"
        return {
            "workflows": f"{composition}, .build().as_agent()",
            "leaf": f"{leaf} on a zero-latency fake LlmProvider (one text chunk, usage, completion)",
            "stream": "async with agent.run(messages, session) as stream",
        }

    def _leaf(self, agent_id: str) -> IAgent:
        if self._react is not None:
            agent: IAgent = self._react(agent_id, self.model, INSTRUCTIONS)
            return agent
        model = self.model

        async def answer(messages: list[ChatMessage]) -> AsyncIterator[str]:
            async with model.stream([ChatMessage.system(INSTRUCTIONS), *messages]) as events:
                async for event in events:
                    if isinstance(event, TextChunk):
                        yield event.text

        return FunctionAgent(agent_id, answer)

    def _sequential(self, workflow_id: str, agents: Sequence[IAgent]) -> IAgent:
        try:
            builder = _find("SequentialBuilder", "raf", "raf.builders")(id=workflow_id)
        except Unavailable:
            return _engine_sequential(workflow_id, agents)
        for agent in agents:
            builder = builder.add_agent(agent)
        workflow_agent: IAgent = builder.build().as_agent()
        return workflow_agent

    def _concurrent(self, workflow_id: str, agents: Sequence[IAgent]) -> IAgent:
        try:
            builder = _find("ConcurrentBuilder", "raf", "raf.builders")(id=workflow_id)
        except Unavailable:
            return _engine_concurrent(workflow_id, agents)
        for agent in agents:
            builder = builder.add_agent(agent)
        workflow_agent: IAgent = builder.build().as_agent()
        return workflow_agent

    async def chain(self, agents: int) -> Run:
        workflow = self._sequential("chain", [self._leaf(f"agent{i}") for i in range(agents)])
        return lambda: _consume(workflow, None)

    async def fan_out(self, agents: int) -> Run:
        workflow = self._concurrent("fan_out", [self._leaf(f"agent{i}") for i in range(agents)])
        return lambda: _consume(workflow, None)

    async def sessions(self, sessions: int, agents: int) -> Run:
        import anyio

        workflow = self._sequential("chain", [self._leaf(f"agent{i}") for i in range(agents)])

        async def run() -> Outcome:
            outcomes: list[Outcome] = []

            async def one() -> None:
                outcomes.append(await _consume(workflow, Session()))

            async with anyio.create_task_group() as tg:
                for _ in range(sessions):
                    tg.start_soon(one)
            return Outcome(sum(o.tokens for o in outcomes), sum(o.replies for o in outcomes))

        return run

    async def nested(self, depth: int) -> Callable[[], Awaitable[float]]:
        agent = self._leaf("leaf")
        for level in range(depth):
            agent = self._sequential(f"level{level}", [agent])
        model = self.model

        async def run() -> float:
            latency = 0.0
            async with agent.run(PROMPT, Session()) as stream:
                async for update in stream:
                    if update.type == "text_delta":
                        latency = now() - model.stamp
            return latency

        return run

    async def checkpointed(self, agents: int, directory: str) -> Checkpointed:
        store_type = _find("SqliteCheckpointStore", "raf.stores.sqlite", "raf.stores")
        store: Any = await store_type(os.path.join(directory, "raf.sqlite")).__aenter__()
        workflow = self._sequential("chain", [self._leaf(f"agent{i}") for i in range(agents)])

        async def checkpoints() -> int:
            session = Session(store=store)
            await _consume(workflow, session)
            return len(await store.list(session.id))

        return Checkpointed(
            plain=lambda: _consume(workflow, Session()),
            checkpointed=lambda: _consume(workflow, Session(store=store)),
            checkpoints=checkpoints,
            close=store.aclose,
        )


def _engine_sequential(workflow_id: str, agents: Sequence[IAgent]) -> IAgent:
    """A sequential chain on the graph engine, for while `SequentialBuilder` is missing."""
    engine = _engine()
    builder = engine.WorkflowBuilder(workflow_id)
    nodes = [engine.AgentExecutor(agent, output_response=True) for agent in agents]
    for node in nodes:
        builder.add_executor(node)
    for source, target in itertools.pairwise(nodes):
        builder.add_edge(source, target)
    workflow_agent: IAgent = builder.set_start(nodes[0]).build().as_agent(kind="sequential")
    return workflow_agent


def _engine_concurrent(workflow_id: str, agents: Sequence[IAgent]) -> IAgent:
    """Fan-out and join on the graph engine, for while `ConcurrentBuilder` is missing."""
    engine = _engine()

    async def dispatch(message: Any, ctx: Any) -> None:
        await ctx.send(message)

    async def join(conversations: list[list[ChatMessage]], ctx: Any) -> None:
        await ctx.yield_output([conversation[-1] for conversation in conversations])

    start = engine.FunctionExecutor("dispatch", dispatch)
    end = engine.FunctionExecutor("aggregate", join)
    nodes = [engine.AgentExecutor(agent) for agent in agents]
    builder = engine.WorkflowBuilder(workflow_id).add_executor(start).add_executor(end)
    for node in nodes:
        builder.add_executor(node)
    builder.add_fan_out(start, nodes).add_fan_in(nodes, end).set_start(start)
    workflow_agent: IAgent = builder.build().as_agent(kind="concurrent")
    return workflow_agent


def _engine() -> Any:
    try:
        return importlib.import_module("raf.engine")
    except ImportError as exc:
        raise Unavailable(f"raf has neither the builders nor the engine yet: {exc}") from exc


async def _consume(agent: IAgent, session: Session | None) -> Outcome:
    """Run `agent` once through its stream; count tokens, then the response's messages."""
    tokens = 0
    run = agent.run(PROMPT, session if session is not None else Session())
    async with run as stream:
        async for update in stream:
            if update.type == "text_delta" and update.text == TOKEN:
                tokens += 1
    response = run.response
    return Outcome(tokens, len(response.messages) if response is not None else 0)


def _is_system(message: ChatMessage) -> bool:
    return message.role == "system"
