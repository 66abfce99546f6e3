"""`ConcurrentBuilder`: the same input to every agent at once, then one aggregation.

Example:
    >>> import anyio
    >>> from raf import FunctionAgent
    >>> pro = FunctionAgent("pro", lambda messages: "yes")
    >>> con = FunctionAgent("con", lambda messages: "no")
    >>> debate = ConcurrentBuilder(id="debate").add_agent(pro).add_agent(con).build()
    >>> [m.text for m in anyio.run(debate.as_agent().run("tea?").collect).messages]
    ['yes', 'no']
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Self, cast

from raf._describe import describe
from raf.agent import IAgent, check_agent_id
from raf.builders._participants import check_agent, check_participants, free_id
from raf.engine.builder import WorkflowBuilder
from raf.engine.context import NodeContext
from raf.engine.executors import AgentExecutor, Executor, conversation_of
from raf.engine.workflow import Workflow
from raf.messages import ChatMessage
from raf.updates import AgentResponse

DEFAULT_ID = "workflow_concurrent_source"
DISPATCHER = "dispatcher"
AGGREGATOR = "aggregator"

Aggregator = Callable[[dict[str, AgentResponse]], Any]
"""`fn(results)` (sync or async): results by agent id, in participant order; returns messages
(a `ChatMessage` or a list) or any value."""


class ConcurrentBuilder:
    """Builds a workflow running every agent on the same input at once.

    Their streams interleave, each item attributed by its `path`. The default aggregation
    returns each agent's last message in participant order (not completion order); a custom
    aggregator may return messages or a value.

    Args:
        id: the workflow id (`workflow_concurrent_source` by default).
    """

    def __init__(self, id: str | None = None) -> None:
        self._id = check_agent_id(id) if id is not None else DEFAULT_ID
        self._agents: list[IAgent] = []
        self._aggregator: Aggregator | None = None

    def add_agent(self, agent: IAgent) -> Self:
        """Add a participant.

        Raises:
            TypeError: `agent` is not an agent instance (a class, a `Workflow`, an id).
        """
        self._agents.append(check_agent("ConcurrentBuilder", self._id, agent))
        return self

    def with_aggregator(self, fn: Aggregator | None = None) -> Self:
        """Aggregate with `fn(results)`; None restores the default (last messages in order).

        Raises:
            TypeError: `fn` is neither callable nor None.
        """
        if fn is not None and not callable(fn):
            raise TypeError(
                f"ConcurrentBuilder {self._id!r}: with_aggregator(fn) takes a function "
                "fn(results: dict[str, AgentResponse]) returning messages or a value (or None "
                f"for the default), got {describe(fn)}"
            )
        self._aggregator = fn
        return self

    def build(self) -> Workflow:
        """Check the participants and compile the fan-out and fan-in onto the graph engine.

        Raises:
            GraphValidationError: no participants, or two with the same id.
        """
        agents = check_participants("ConcurrentBuilder", self._id, self._agents)
        ids = [a.id for a in agents]
        branches = [Branch(agent) for agent in agents]
        dispatcher = Dispatcher(free_id(DISPATCHER, ids))
        aggregator = Aggregate(free_id(AGGREGATOR, ids), ids, self._aggregator)
        builder = WorkflowBuilder(self._id).add_executor(dispatcher)
        for branch in branches:
            builder.add_executor(branch)
        builder.add_executor(aggregator)
        builder.add_fan_out(dispatcher, branches)
        builder.add_fan_in(branches, aggregator)
        return builder.set_start(dispatcher).build(check_structure=False).with_kind("concurrent")


class Dispatcher(Executor):
    """Sends the input conversation to every branch."""

    async def handle(self, message: Any, ctx: NodeContext) -> None:
        """Fan the conversation out."""
        await ctx.send(conversation_of(message, self.id))


class Branch(AgentExecutor):
    """One participant: runs its agent and sends the `AgentResponse` to the aggregator."""

    def __init__(self, agent: IAgent) -> None:
        super().__init__(agent, output_response=False)

    async def handle(self, message: Any, ctx: NodeContext) -> AgentResponse:
        """Run the agent on the shared input."""
        response = await ctx.invoke_agent(self.as_agent(), conversation_of(message, self.id))
        await ctx.send(response)
        return response


class Aggregate(Executor):
    """Combines the branches' responses (in participant order) into the workflow's output."""

    def __init__(self, id: str, agent_ids: list[str], fn: Aggregator | None) -> None:
        super().__init__(id)
        self._agent_ids = agent_ids
        self._fn = fn

    async def handle(self, message: Any, ctx: NodeContext) -> Any:
        """Aggregate and yield the result."""
        responses = cast("list[AgentResponse]", message)
        if self._fn is None:
            output: Any = [r.messages[-1] for r in responses if r.messages]
        else:
            results = dict(zip(self._agent_ids, responses, strict=True))
            output = self._fn(results)
            if inspect.isawaitable(output):
                output = await output
        if isinstance(output, ChatMessage):
            output = [output]
        await ctx.yield_output(output)
        return output
