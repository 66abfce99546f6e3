"""`SequentialBuilder`: agents one after another, each seeing the whole conversation so far.

Example:
    >>> import anyio
    >>> from raf import FunctionAgent
    >>> draft = FunctionAgent("draft", lambda messages: "a draft")
    >>> edit = FunctionAgent("edit", lambda messages: messages[-1].text.upper())
    >>> pipeline = SequentialBuilder(id="write").add_agent(draft).add_agent(edit).build()
    >>> [m.text for m in anyio.run(pipeline.as_agent().run("go").collect).messages]
    ['a draft', 'A DRAFT']
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any, ClassVar, Self, cast

from raf.agent import IAgent, check_agent_id
from raf.builders._participants import check_agent, check_participants
from raf.engine.builder import WorkflowBuilder
from raf.engine.context import NodeContext
from raf.engine.executors import AgentExecutor, conversation_of
from raf.engine.workflow import Workflow
from raf.messages import ChatMessage
from raf.updates import AgentResponse

DEFAULT_ID = "workflow_seq_agent_0"


class SequentialBuilder:
    """Builds a workflow running its agents in order.

    Each agent gets the whole conversation so far: the input plus every earlier agent's
    messages. The workflow's response is what the agents added, in order.

    Args:
        id: the workflow id (`workflow_seq_agent_0` by default).
    """

    def __init__(self, id: str | None = None) -> None:
        self._id = check_agent_id(id) if id is not None else DEFAULT_ID
        self._agents: list[IAgent] = []

    def add_agent(self, agent: IAgent) -> Self:
        """Append `agent` to the sequence.

        Raises:
            TypeError: `agent` is not an agent instance (a class, a `Workflow`, an id).
        """
        self._agents.append(check_agent("SequentialBuilder", self._id, agent))
        return self

    def build(self) -> Workflow:
        """Check the participants and compile the sequence onto the graph engine.

        Raises:
            GraphValidationError: no participants, or two with the same id.
        """
        agents = check_participants("SequentialBuilder", self._id, self._agents)
        builder = WorkflowBuilder(self._id)
        steps = [SequenceStep(agent) for agent in agents]
        for step in steps:
            builder.add_executor(step)
        for before, after in pairwise(steps):
            builder.add_edge(before, after)
        return builder.set_start(steps[0]).build(check_structure=False).with_kind("sequential")


class SequenceStep(AgentExecutor):
    """One agent of a sequence: runs it on the conversation so far and passes it on.

    Between steps travels `(start, conversation)`: `start` marks where the input ends, so
    the last step outputs exactly what the agents added (with the last agent's `value`, if
    it has one).
    """

    kind: ClassVar[str] = "agent"

    def __init__(self, agent: IAgent) -> None:
        super().__init__(agent, output_response=False)

    async def handle(self, message: Any, ctx: NodeContext) -> AgentResponse:
        """Run the agent, then send the longer conversation on (or output the additions)."""
        start: int
        conversation: list[ChatMessage]
        if type(message) is tuple:
            start, conversation = cast("tuple[int, list[ChatMessage]]", message)
        else:
            conversation = conversation_of(message, self.id)
            start = len(conversation)
        response = await ctx.invoke_agent(self.as_agent(), conversation)
        conversation = [*conversation, *response.messages]
        if ctx.successors:
            await ctx.send((start, conversation))
        elif response.value is not None:
            # The last agent's structured value is the sequence's value.
            await ctx.yield_output(
                AgentResponse(messages=conversation[start:], value=response.value)
            )
        else:
            await ctx.yield_output(conversation[start:])
        return response
