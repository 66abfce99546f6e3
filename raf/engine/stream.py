"""`WorkflowStream`: the events of a run, through one bounded memory stream.

`async with workflow.run_stream(x) as events: async for event in events: ...`. The run's task
group lives in the context manager; leaving the block early cancels the run. Node failures
arrive as events; an error of the run itself (say, resuming with a bad checkpoint id) is raised
from the iterator after the events produced before it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from types import TracebackType

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from raf.engine.events import WorkflowEvent
from raf.engine.runner import EventSink, unwrap
from raf.run import STREAM_BUFFER

__all__ = ["WorkflowStream"]

StreamBody = Callable[[EventSink], Awaitable[object]]
"""The work of a streamed run: reports events to the sink it is given."""


class WorkflowStream:
    """A streamed workflow run: `async with` it to iterate its events.

    Example:
        >>> async def show(workflow):
        ...     async with workflow.run_stream("hi") as events:
        ...         async for event in events:
        ...             print(type(event).__name__)
    """

    __slots__ = ("_body", "_error", "_exit", "_finished", "_started", "_tg")

    def __init__(self, body: StreamBody) -> None:
        self._body = body
        self._started = False
        self._finished = False
        self._error: BaseException | None = None
        self._exit: AsyncExitStack | None = None
        self._tg: TaskGroup | None = None

    async def __aenter__(self) -> AsyncIterator[WorkflowEvent]:
        if self._started:
            raise RuntimeError("a WorkflowStream can be entered once; call run_stream() again")
        self._started = True
        send, receive = anyio.create_memory_object_stream[WorkflowEvent](STREAM_BUFFER)
        async with AsyncExitStack() as stack:
            stack.push_async_callback(receive.aclose)
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            self._tg.start_soon(self._drive, send)
            self._exit = stack.pop_all()
        return _Events(self, receive)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None and self._exit is not None
        if not self._finished:
            self._tg.cancel_scope.cancel()
        # The consumer's own exception is not fed into the task group (it would come back in
        # an exception group); the producer never raises, it keeps its error for the iterator.
        single: BaseException | None = None
        try:
            await self._exit.aclose()
        except BaseExceptionGroup as group:
            single = unwrap(group)
            if single is group:
                raise
        if single is not None:
            raise single
        return None

    def __aiter__(self) -> AsyncIterator[WorkflowEvent]:
        raise TypeError(
            "a workflow stream is iterated inside its context manager: write "
            "`async with workflow.run_stream(input) as events: async for event in events: ...`"
        )

    async def _drive(self, send: MemoryObjectSendStream[WorkflowEvent]) -> None:
        send_nowait = send.send_nowait

        async def sink(event: WorkflowEvent) -> None:
            # Wait (and let the consumer run) only when the buffer is full.
            try:
                send_nowait(event)
            except anyio.WouldBlock:
                await send.send(event)

        async with send:
            try:
                await self._body(sink)
            except Exception as exc:
                self._error = unwrap(exc)
        self._finished = True

    def take_error(self) -> BaseException | None:
        """The run's own error, once (the iterator raises it at the end)."""
        error, self._error = self._error, None
        return error


class _Events:
    __slots__ = ("_receive", "_stream")

    def __init__(
        self, stream: WorkflowStream, receive: MemoryObjectReceiveStream[WorkflowEvent]
    ) -> None:
        self._stream = stream
        self._receive = receive

    def __aiter__(self) -> _Events:
        return self

    async def __anext__(self) -> WorkflowEvent:
        try:
            return self._receive.receive_nowait()
        except anyio.WouldBlock:
            try:
                return await self._receive.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                pass
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            pass
        error = self._stream.take_error()
        if error is not None:
            raise error
        raise StopAsyncIteration
