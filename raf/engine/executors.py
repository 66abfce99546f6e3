"""Executors: the nodes of a workflow graph.

An `Executor` has an `id` and handles one message at a time with `handle(message, ctx)`,
sending messages on, yielding outputs and streaming updates through its `NodeContext`.
`FunctionExecutor` wraps an async function; `AgentExecutor` runs any `IAgent` as a node.

Example:
    >>> async def double(message, ctx):
    ...     await ctx.send(message * 2)
    >>> FunctionExecutor("double", double).id
    'double'
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from raf.messages import ChatMessage
from raf.updates import AgentResponse

if TYPE_CHECKING:
    from raf.agent import IAgent
    from raf.engine.context import NodeContext

__all__ = ["AgentExecutor", "Executor", "FunctionExecutor", "HandlerFn", "conversation_of"]

HandlerFn = Callable[[Any, "NodeContext"], Awaitable[Any]]
"""`async fn(message, ctx) -> output`: the body of a `FunctionExecutor`."""


class Executor(ABC):
    """A workflow node: subclass it and implement `handle`.

    `handle` runs once per message delivered to the node (several messages in one superstep are
    handled one after the other, in order); what it returns is the node's output, reported in
    `NodeCompleted`. Executors hold no run state: keep it in `ctx.state`, which belongs to the
    session, so one workflow serves many sessions at once.

    Example:
        >>> class Upper(Executor):
        ...     async def handle(self, message, ctx):
        ...         await ctx.send(message.upper())
        >>> Upper("upper").as_agent() is None
        True
    """

    kind: ClassVar[str] = "executor"
    """What kind of node this is, shown when the graph is rendered."""

    def __init__(self, id: str) -> None:
        self._id = id

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self._id!r})"

    @property
    def id(self) -> str:
        """The node id, unique in its workflow."""
        return self._id

    @abstractmethod
    async def handle(self, message: Any, ctx: NodeContext) -> Any:
        """Handle one message; the return value is the node's output."""

    def as_agent(self) -> IAgent | None:
        """The agent this node runs, if it runs one (None here)."""
        return None

    def models(self) -> Sequence[type[BaseModel]]:
        """Pydantic model types this node keeps in `ctx.state`, sends or yields.

        A checkpoint brings a model back as itself only when its class is declared (here,
        by an agent's output schema, or with `raf.register_model`); override this to declare
        the ones a resumed run in a new process must get back.
        """
        return ()

    def agents(self) -> Sequence[IAgent]:
        """Every agent this node runs, in order: its `as_agent()`, or the several agents of
        a node that runs them itself (a vote's poll). They are its workflow agent's children."""
        agent = self.as_agent()
        return () if agent is None else (agent,)


class FunctionExecutor(Executor):
    """A node whose work is `async fn(message, ctx)`.

    Args:
        id: the node id.
        fn: an async function (or an object with an async `__call__`).

    Raises:
        TypeError: when `fn` is not async.

    Example:
        >>> async def shout(message, ctx):
        ...     await ctx.yield_output(message.upper())
        >>> FunctionExecutor("shout", shout).kind
        'function'
    """

    kind: ClassVar[str] = "function"

    def __init__(self, id: str, fn: HandlerFn) -> None:
        super().__init__(id)
        if not _is_async(fn):
            raise TypeError(
                f"FunctionExecutor {id!r} needs an async function `async def fn(message, ctx)`, "
                f"got {fn!r}"
            )
        self._fn = fn

    async def handle(self, message: Any, ctx: NodeContext) -> Any:
        """Call `fn(message, ctx)` and return its result."""
        return await self._fn(message, ctx)


class AgentExecutor(Executor):
    """A node that runs an `IAgent` on the conversation it receives.

    The input is a `ChatMessage`, a `str` (a user message), an `AgentResponse` (its messages) or a
    list of those (flattened in order). The node streams the agent's items, sends the
    conversation so far (input plus the agent's messages) to its successors, and its output is
    the `AgentResponse`. When the agent (a nested workflow) ends waiting for a human, the node
    waits with it; the next resume passes the answers down.

    Args:
        agent: the agent to run.
        id: the node id (the agent's id by default).
        output_response: also yield the `AgentResponse` as a workflow output; by default
            (None) only when the node has no successors, so a graph of agents answers with
            its last agents' responses.

    Example:
        >>> from raf.function_agent import FunctionAgent
        >>> AgentExecutor(FunctionAgent("echo", lambda m: m[-1].text)).id
        'echo'
    """

    kind: ClassVar[str] = "agent"

    def __init__(
        self, agent: IAgent, *, id: str | None = None, output_response: bool | None = None
    ) -> None:
        super().__init__(id if id is not None else agent.id)
        self._agent = agent
        self._output_response = output_response

    def as_agent(self) -> IAgent:
        """The wrapped agent."""
        return self._agent

    async def handle(self, message: Any, ctx: NodeContext) -> AgentResponse:
        """Run the agent on the conversation, then send the conversation on."""
        messages = conversation_of(message, self._id)
        response = await ctx.invoke_agent(self._agent, messages)
        successors = ctx.successors
        if successors:
            await ctx.send([*messages, *response.messages])
        output = self._output_response
        if output or (output is None and not successors):
            await ctx.yield_output(response)
        return response


_ONLY_MESSAGES = {ChatMessage}


def conversation_of(message: Any, node_id: str) -> list[ChatMessage]:
    """The messages an agent node runs on, from what it received.

    Raises:
        TypeError: naming the node, when the input holds anything but messages, text or responses.
    """
    if type(message) is list:
        items: list[Any] = message  # pyright: ignore[reportUnknownVariableType]
        if not items or set(map(type, items)) == _ONLY_MESSAGES:
            return items
        flat: list[ChatMessage] = []
        for item in items:
            flat.extend(conversation_of(item, node_id))
        return flat
    if isinstance(message, ChatMessage):
        return [message]
    if isinstance(message, str):
        return [ChatMessage.user(message)]
    if isinstance(message, AgentResponse):
        return list(message.messages)
    raise TypeError(
        f"agent node {node_id!r} received a value of type {type(message).__name__}; send it a ChatMessage, "
        "a str, an AgentResponse or a list of those"
    )


def _is_async(fn: Any) -> bool:
    """True for an async function, or an object whose `__call__` is one."""
    return callable(fn) and (
        inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(fn.__call__)
    )
