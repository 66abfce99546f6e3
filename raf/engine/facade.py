"""`WorkflowAgent`: a workflow as an `IAgent`.

The event mapping is `raf.engine.mapping`; waiting, answering and resuming are
`raf.engine.protocol`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from raf.agent import AgentMetadata, BaseAgent, IAgent
from raf.engine.mapping import AgentSink
from raf.engine.protocol import root_turn, run_as_agent
from raf.messages import ChatMessage
from raf.run import RunContext
from raf.updates import AgentResponse

if TYPE_CHECKING:
    from raf.engine.workflow import Workflow

__all__ = ["WorkflowAgent"]


class WorkflowAgent(BaseAgent):
    """A `Workflow` run as an agent; its children are the agents of its `AgentExecutor` nodes.

    The conversation (history plus the new messages) goes to the start node. While the run
    waits for a human, its state is kept in the session; the next `run()` on that session
    answers the pending requests (a user message answers the oldest; a tool message whose
    `ToolResultContent.call_id` is a request id answers that one with its JSON) and resumes.
    When the run's root checkpoints, a nested workflow agent keeps its state in the session
    after each of its supersteps and has the root save a checkpoint, so a resume continues
    inside it.

    Args:
        workflow: the workflow.
        id: the agent id (the workflow's id by default).
        name: display name.
        description: what it does.
        kind: the metadata kind (`graph`, or the builder's pattern name).

    Example:
        >>> import anyio
        >>> from raf.engine import WorkflowBuilder
        >>> from raf.function_agent import FunctionAgent
        >>> upper = FunctionAgent("upper", lambda m: m[-1].text.upper())
        >>> workflow = WorkflowBuilder("w").add_executor(upper).set_start(upper).build()
        >>> agent = workflow.as_agent()
        >>> [a.id for a in agent.subagents()]
        ['upper']
    """

    def __init__(
        self,
        workflow: Workflow,
        id: str | None = None,
        *,
        name: str | None = None,
        description: str = "",
        kind: str = "graph",
    ) -> None:
        super().__init__(id if id is not None else workflow.id, name=name, description=description)
        self._workflow = workflow
        self._kind = kind
        children: list[IAgent] = []
        for executor in workflow.executors.values():
            for agent in executor.agents():
                if not any(agent is known for known in children):
                    children.append(agent)
        self._children = tuple(children)

    @property
    def workflow(self) -> Workflow:
        """The workflow this agent runs."""
        return self._workflow

    @property
    def metadata(self) -> AgentMetadata:
        """Id, name, description, kind, children and output schema."""
        return AgentMetadata(
            id=self.id,
            name=self._name,
            description=self.description,
            kind=self._kind,
            children=tuple(child.id for child in self._children),
            output_schema=self.output_schema(),
        )

    def subagents(self) -> Sequence[IAgent]:
        """The agents of the `AgentExecutor` nodes, in node order."""
        return self._children

    async def invoke_turn(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        """One turn as the root of a run: the new messages answer pending requests first, and
        the turn enters the history once, in order."""
        return await root_turn(self._workflow, messages, ctx, AgentSink(ctx))

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        """Run the workflow on the conversation (or resume it when it waits)."""
        return await run_as_agent(self._workflow, messages, ctx, AgentSink(ctx))
