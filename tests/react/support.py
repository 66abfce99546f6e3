"""Agents shared by the ReAct tests."""

from __future__ import annotations

from collections.abc import Sequence

from raf.agent import BaseAgent, IAgent, invoke_agent
from raf.messages import ChatMessage
from raf.run import RunContext
from raf.updates import AgentResponse


class Outer(BaseAgent):
    """A minimal parent that runs one child agent in place."""

    kind = "outer"

    def __init__(self, id: str, child: IAgent) -> None:
        super().__init__(id)
        self.child = child

    def subagents(self) -> Sequence[IAgent]:
        return (self.child,)

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        return await invoke_agent(self.child, messages, ctx)
