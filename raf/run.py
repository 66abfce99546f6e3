"""`AgentRun` (the handle `IAgent.run` returns) and `RunContext` (what a run hands its agents).

A run's work happens in a task group owned by `AgentRun.__aenter__`; its updates reach the
consumer through one bounded memory stream, so a slow consumer back-pressures the producers and
leaving the `async with` block cancels every task of the run.

Example:
    >>> import anyio
    >>> from raf import FunctionAgent
    >>> agent = FunctionAgent("echo", lambda messages: messages[-1].text)
    >>> anyio.run(lambda: agent.run("hi").collect()).text
    'hi'
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from raf.updates import AgentPath, AgentResponse, AgentUpdate

if TYPE_CHECKING:
    from raf.agent import RunOptions
    from raf.budget import BudgetTracker
    from raf.session import Session

Emit = Callable[[AgentUpdate], Awaitable[None]]
"""Sends one update toward the consumer of the run."""

RunBody = Callable[[Emit], Awaitable[AgentResponse]]
"""The work of a run: emits updates, returns the response."""

STREAM_BUFFER = 256
"""Updates buffered between a run and its consumer before producers wait."""


async def discard(update: AgentUpdate) -> None:
    """An `Emit` that drops every update (for `collect()`)."""


@dataclass(slots=True)
class RunContext:
    """What an agent gets when it runs inside a run: where it is, and where updates go.

    `path` is this agent's path from the agent `run()` was called on; items an agent emits
    carry it. `session` holds state keyed by path; `extras` carries per-run data that nested
    layers pass down (answers to human requests, say).
    """

    path: AgentPath
    session: Session
    options: RunOptions
    emit: Emit
    budget: BudgetTracker | None = None
    extras: dict[str, Any] = field(default_factory=lambda: dict[str, Any]())

    def child(self, agent_id: str) -> RunContext:
        """The context of a direct child agent `agent_id`."""
        return RunContext(
            self.path + (agent_id,), self.session, self.options, self.emit, self.budget, self.extras
        )

    def with_emit(self, emit: Emit) -> RunContext:
        """The same context sending updates to `emit`."""
        return RunContext(self.path, self.session, self.options, emit, self.budget, self.extras)

    def key(self, name: str) -> str:
        """The session key of `name` for this agent."""
        return "/".join(self.path) + "#" + name

    def charge_round(self) -> None:
        """Count one model call against the run's budget."""
        if self.budget is not None:
            self.budget.charge_round(self.path)

    def charge_tokens(self, tokens: int) -> None:
        """Count `tokens` against the run's budget."""
        if self.budget is not None:
            self.budget.charge_tokens(tokens, self.path)


class AgentRun:
    """One run of an agent: `async with` it to stream, or `await .collect()`.

    Example:
        >>> async def main(agent):
        ...     async with agent.run("hello") as stream:
        ...         async for update in stream:
        ...             print(update.type, update.path)
    """

    __slots__ = ("_body", "_error", "_exit", "_receive", "_state", "_tg", "response")

    def __init__(self, body: RunBody) -> None:
        self._body = body
        self._state = "new"
        self._error: BaseException | None = None
        self._exit: AsyncExitStack | None = None
        self._tg: TaskGroup | None = None
        self._receive: MemoryObjectReceiveStream[AgentUpdate] | None = None
        self.response: AgentResponse | None = None
        """The collected response, once the stream ended without error."""

    async def __aenter__(self) -> AsyncIterator[AgentUpdate]:
        if self._state != "new":
            raise RuntimeError("an AgentRun can be entered once; call agent.run(...) again")
        self._state = "streaming"
        send, receive = anyio.create_memory_object_stream[AgentUpdate](STREAM_BUFFER)
        self._receive = receive
        async with AsyncExitStack() as stack:
            stack.push_async_callback(receive.aclose)
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            self._tg.start_soon(self._drive, send)
            self._exit = stack.pop_all()
        return _UpdateStream(self, receive)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None and self._exit is not None
        if self._state != "finished":
            # Cancelling is only needed while the body still runs (and costs a few tasks'
            # worth of scheduling on asyncio when it does not).
            self._tg.cancel_scope.cancel()
        self._state = "done"
        # The consumer's own exception is not fed into the task group: it would come back
        # wrapped in an exception group. The producer never raises (it keeps its error).
        single: BaseException | None = None
        try:
            await self._exit.aclose()
        except BaseExceptionGroup as group:
            if len(group.exceptions) != 1:
                raise
            single = group.exceptions[0]
        if single is not None:
            raise single
        return None

    async def _drive(self, send: MemoryObjectSendStream[AgentUpdate]) -> None:
        async with send:
            try:
                self.response = await self._body(_buffered_emit(send))
            except Exception as exc:
                self._error = exc
        self._state = "finished"

    def __aiter__(self) -> AsyncIterator[AgentUpdate]:
        raise TypeError(
            "an AgentRun streams inside its context manager: write "
            "`async with agent.run(messages) as stream: async for update in stream: ...`, "
            "or `await agent.run(messages).collect()`"
        )

    async def collect(self) -> AgentResponse:
        """Run to the end, discarding the stream, and return the response."""
        if self._state != "new":
            raise RuntimeError("this AgentRun was already started; call agent.run(...) again")
        self._state = "done"
        self.response = await self._body(discard)
        return self.response


def _buffered_emit(send: MemoryObjectSendStream[AgentUpdate]) -> Emit:
    """An `Emit` that only waits (and yields to the scheduler) when the buffer is full.

    Every item still goes through the one bounded stream, so a slow consumer back-pressures
    the run; a fast run just does not pay a task switch per item.
    """
    send_nowait = send.send_nowait

    async def emit(update: AgentUpdate) -> None:
        try:
            send_nowait(update)
        except anyio.WouldBlock:
            await send.send(update)

    return emit


class _UpdateStream:
    """The async iterator of a run's updates; raises the run's error at the end."""

    __slots__ = ("_receive", "_run")

    def __init__(self, run: AgentRun, receive: MemoryObjectReceiveStream[AgentUpdate]) -> None:
        self._run = run
        self._receive = receive

    def __aiter__(self) -> _UpdateStream:
        return self

    async def __anext__(self) -> AgentUpdate:
        try:
            # Take what is buffered without a scheduling point; wait only when it is empty.
            return self._receive.receive_nowait()
        except anyio.WouldBlock:
            try:
                return await self._receive.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                pass
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            pass
        error = self._run._error  # pyright: ignore[reportPrivateUsage]
        if error is not None:
            self._run._error = None  # pyright: ignore[reportPrivateUsage]
            raise error
        raise StopAsyncIteration
