"""`ProducerStream`: work run in a task group, its items handed to the consumer through one stream.

The shared machinery of `AgentRun` and `WorkflowStream`. `__aenter__` starts the body in a task
group it owns and returns the iterator; leaving the block cancels the body if it still runs.
Items go through one bounded buffer (`Channel`): the body waits only when the buffer is full, so
a slow consumer back-pressures it while a fast one costs no task switch per item. The body never
raises into the task group: its error is kept and raised by the iterator after the items
produced before it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Generic, TypeVar, cast

import anyio

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

T = TypeVar("T")
# What the body returns; covariant, so that an `AgentRun[Plan]` is an `AgentRun[BaseModel]`.
R = TypeVar("R", covariant=True)

STREAM_BUFFER = 256
"""Items buffered between a producer and its consumer before the producer waits."""

Send = Callable[[T], Awaitable[None]]
"""Hands one item to the consumer."""

Release = Callable[[], Awaitable[None]]
"""Gives back what a stream's admission claimed. It runs where the stream may be cancelled:
one that awaits shields itself from cancellation."""

Admit = Callable[[], Awaitable[Release]]
"""Claims what a stream needs before its body starts (a session); returns how to release it."""


def unwrap_group(error: BaseException) -> BaseException:
    """The only exception of a (nested) single-member exception group, else `error`."""
    current = error
    while isinstance(current, BaseExceptionGroup):
        members = cast("BaseExceptionGroup[BaseException]", current).exceptions
        if len(members) != 1:
            break
        current = members[0]
    return cast(BaseException, current)


@contextmanager
def single_exceptions() -> Generator[None]:
    """Let a lone exception out of the exception groups raised in the block, as itself (its
    `__cause__` and traceback kept); a group of several stays a group."""
    failure: BaseException | None = None
    try:
        yield
    except BaseExceptionGroup as group:
        failure = unwrap_group(group)
        if failure is group:
            raise
    if failure is not None:
        raise failure


class _Done(tuple[()]):
    """An awaitable that is already done: awaiting it costs no coroutine (`DONE`)."""

    __slots__ = ()

    # The empty tuple's own iterator (C code): done at once, with None.
    __await__ = cast("Callable[[_Done], Generator[None]]", tuple[()].__iter__)


DONE: Awaitable[None] = _Done()
"""Returned by functions typed `-> Awaitable[None]` that had nothing to wait for."""


class Channel(Generic[T]):
    """The buffer between one producer task and one consumer: the producer appends and waits
    while more than `STREAM_BUFFER` items are waiting; the consumer takes and waits while it is
    empty. An item costs an append and a pop; a task switch happens only when one side waits.
    """

    __slots__ = ("closed", "items", "reader", "writer")

    def __init__(self) -> None:
        self.items: deque[T] = deque()
        self.closed = False
        """Set when the producer has sent its last item."""
        self.reader: anyio.Event | None = None
        """Set by the producer when the consumer waits for an item."""
        self.writer: anyio.Event | None = None
        """Set by the consumer when the producer waits for room."""

    def send(self, item: T) -> Awaitable[None]:
        """Append `item`; the result, awaited, waits while the buffer is full until the
        consumer has taken one (no coroutine is made when there is room: the usual case)."""
        items = self.items
        items.append(item)
        reader = self.reader
        if reader is not None:
            self.reader = None
            reader.set()
        if len(items) > STREAM_BUFFER:
            writer = self.writer = anyio.Event()
            return writer.wait()
        return DONE

    def close(self) -> None:
        """Say that no item follows (waking a waiting consumer)."""
        self.closed = True
        reader = self.reader
        if reader is not None:
            self.reader = None
            reader.set()

    async def wait(self) -> None:
        """Wait until an item is buffered or the producer has closed: first by letting the
        tasks that are ready run once (the producer mostly, which then hands over what it
        has: so a run's items are taken soon after they are made, not once every other ready
        run has made its own), then on an event."""
        if not self.items and not self.closed:
            # A checkpoint, as `anyio.lowlevel.checkpoint()` is (the same backend call), without
            # loading `anyio.lowlevel` and what it imports at `import raf` (1.5% of it).
            await anyio.sleep(0)  # noqa: ASYNC115 - see above
        while not self.items and not self.closed:
            reader = self.reader = anyio.Event()
            await reader.wait()

    def take(self) -> T:
        """The oldest buffered item (there must be one); wakes a producer waiting for room."""
        items = self.items
        item = items.popleft()
        writer = self.writer
        if writer is not None and len(items) <= STREAM_BUFFER:
            self.writer = None
            writer.set()
        return item

    def take_all(self) -> list[T]:
        """Every buffered item, oldest first; wakes a producer waiting for room."""
        items = list(self.items)
        self.items.clear()
        writer = self.writer
        if writer is not None:
            self.writer = None
            writer.set()
        return items


class ProducerStream(Generic[T, R]):
    """Runs `body(send)` while the consumer iterates what it sends.

    Subclasses set `misuse`, the message of the `TypeError` raised when the stream is iterated
    without `async with`.
    """

    __slots__ = ("_admission", "_body", "_channel", "_error", "_release", "_state", "_tg", "result")

    misuse = "enter the stream with `async with` before iterating it"

    def __init__(self, body: Callable[[Send[T]], Awaitable[R]], admit: Admit | None = None) -> None:
        self._body = body
        self._admission = admit
        self._release: Release | None = None
        self._state = "new"
        self._error: BaseException | None = None
        self._tg: TaskGroup | None = None
        self._channel: Channel[T] | None = None
        self.result: R | None = None
        """What the body returned, once it finished without error."""

    def _claim(self) -> None:
        if self._state != "new":
            raise RuntimeError(
                f"this {type(self).__name__} has run already; start a new one to run again"
            )
        self._state = "started"

    async def _admit(self) -> None:
        """Run `admit` once before the body starts (it may wait, or raise to refuse the run)."""
        if self._admission is not None:
            self._release = await self._admission()

    async def _dismiss(self) -> None:
        """Release what `admit` claimed, once the body has ended or will not run; may be
        called more than once."""
        release, self._release = self._release, None
        if release is not None:
            await release()

    async def __aenter__(self) -> AsyncIterator[T]:
        self._claim()
        await self._admit()
        try:
            return await self._start()
        except BaseException:
            await self._dismiss()
            raise

    async def _start(self) -> AsyncIterator[T]:
        channel = self._channel = Channel[T]()
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        tg.start_soon(self._drive, channel)
        return _Items(self._take_error, channel)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg = self._tg
        assert tg is not None
        if self._state != "finished":
            tg.cancel_scope.cancel()
        self._state = "done"
        # The consumer's own exception is not fed into the task group: it would come back
        # wrapped in an exception group. The body never raises there (it keeps its error).
        try:
            with single_exceptions():
                await tg.__aexit__(None, None, None)
        finally:
            await self._dismiss()
        return None

    def __aiter__(self) -> AsyncIterator[T]:
        raise TypeError(self.misuse)

    async def _drive(self, channel: Channel[T]) -> None:
        try:
            self.result = await self._body(channel.send)
        except Exception as exc:
            self._error = unwrap_group(exc)
        finally:
            try:
                await self._dismiss()
            finally:
                channel.close()
        self._state = "finished"

    def _take_error(self) -> BaseException | None:
        error, self._error = self._error, None
        return error


class _Items(Generic[T]):
    """The consumer's iterator: buffered items first, then the body's error, if any."""

    __slots__ = ("_channel", "_take_error")

    def __init__(self, take_error: Callable[[], BaseException | None], channel: Channel[T]) -> None:
        self._take_error = take_error
        self._channel = channel

    def __aiter__(self) -> _Items[T]:
        return self

    def ready(self) -> bool:
        """Whether an item is buffered: the next `__anext__` has it without waiting."""
        return bool(self._channel.items)

    async def __anext__(self) -> T:
        channel = self._channel
        items = channel.items
        if items and channel.writer is None:
            # What is buffered is taken without a scheduling point (the usual case).
            return items.popleft()
        if not items:
            await channel.wait()
            if not items:  # closed: the body has ended
                error = self._take_error()
                if error is not None:
                    raise error
                raise StopAsyncIteration
        return channel.take()
