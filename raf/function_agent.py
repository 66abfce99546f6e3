"""`FunctionAgent`: an `IAgent` from a Python callable; the quickest custom leaf.

Example:
    >>> import anyio
    >>> async def count(messages):
    ...     for word in ("one ", "two"):
    ...         yield word
    >>> anyio.run(lambda: FunctionAgent("counter", count).run("go").collect()).text
    'one two'
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from contextlib import contextmanager
from typing import Any, ClassVar, cast

from raf._describe import describe, short_repr
from raf._streaming import unwrap_group
from raf.agent import BaseAgent
from raf.errors import AgentError, AgentPath
from raf.messages import ChatMessage, TextContent
from raf.run import RunContext
from raf.updates import AgentResponse, MessageCompleted, TextDelta

AgentFn = Callable[
    [list[ChatMessage]],
    str | ChatMessage | AsyncIterator[str] | Awaitable[str | ChatMessage],
]
"""`fn(messages)`: returns text or a message (directly or awaited), or streams text."""


class FunctionAgent(BaseAgent[None]):
    """An agent whose answer comes from `fn(messages)`.

    `fn` may return a `str` or a `ChatMessage`, be a coroutine function returning one, or be an
    async generator of text deltas. Plain functions run on the event loop: keep them quick.

    Args:
        id: the agent id.
        fn: the callable.
        description: what it does.

    Raises:
        TypeError: `fn` is not callable (or comes before the id).

    When `fn` raises in a run of this agent itself, the run raises `AgentError` at the agent's
    path, with `fn`'s exception as its `__cause__`; nested in a workflow, the workflow's
    `WorkflowError` reports it.
    """

    kind: ClassVar[str] = "function"

    def __init__(self, id: str, fn: AgentFn, description: str = "") -> None:
        if callable(id) and isinstance(fn, str):
            raise TypeError(
                f"FunctionAgent(id, fn) takes the id first: FunctionAgent({fn!r}, fn), "
                f"got the function first"
            )
        super().__init__(id, description=description)
        if not callable(fn):
            fixed = (
                f" (for a fixed answer: lambda messages: {short_repr(fn)})"
                if isinstance(fn, str)
                else ""
            )
            raise TypeError(
                f"FunctionAgent {id!r}: fn must be a function fn(messages) returning a str or "
                f"a ChatMessage (or an async generator of str), got {describe(fn)}{fixed}"
            )
        self._fn = fn

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse[None]:
        """Call `fn` and stream what it returns (its response has no value)."""
        path = ctx.path
        emit = ctx.emit
        with self._failures(path):
            result: Any = self._fn(messages)
        if isinstance(result, AsyncIterator):
            message = await self._stream(cast(AsyncIterator[Any], result), ctx)
        else:
            if inspect.isawaitable(result):
                with self._failures(path):
                    result = await result
            if isinstance(result, ChatMessage):
                message = result
                if message.text:
                    await emit(TextDelta(text=message.text, path=path))
            elif isinstance(result, str):
                message = _assistant(result, self._id)
                await emit(TextDelta(text=result, path=path))
            else:
                raise TypeError(
                    f"FunctionAgent {self._id!r}: fn returned {type(result).__name__}; "
                    "return str, ChatMessage, or stream str from an async generator"
                )
        await emit(MessageCompleted(message=message, path=path))
        return AgentResponse(messages=[message])

    async def _stream(self, chunks: AsyncIterator[Any], ctx: RunContext) -> ChatMessage:
        """Stream `chunks` as text deltas; close the generator however the run ends."""
        parts: list[str] = []
        try:
            while True:
                with self._failures(ctx.path):
                    try:
                        chunk = await anext(chunks)
                    except StopAsyncIteration:
                        break
                if not isinstance(chunk, str):
                    raise TypeError(
                        f"FunctionAgent {self._id!r}: fn streamed {type(chunk).__name__}; "
                        "an async generator of an agent yields str deltas"
                    )
                parts.append(chunk)
                await ctx.emit(TextDelta(text=chunk, path=ctx.path))
        finally:
            close = getattr(chunks, "aclose", None)
            if close is not None:
                with self._failures(ctx.path):
                    await close()
        return _assistant("".join(parts), self._id)

    @contextmanager
    def _failures(self, path: AgentPath) -> Generator[None]:
        """Where `fn`'s own code runs: at the top of a run, what it raises becomes an
        `AgentError` at this agent's path (nested, the workflow's node reports it)."""
        if len(path) > 1:
            yield
            return
        try:
            yield
        except AgentError:
            raise
        except Exception as exc:
            raised = unwrap_group(exc)  # a lone error of fn's own task group, as itself
            raise AgentError(
                f"function agent {self._id!r}: fn raised {type(raised).__name__}: {raised}",
                path=path,
            ) from raised


def _assistant(text: str, author: str) -> ChatMessage:
    return ChatMessage(role="assistant", contents=[TextContent(text=text)], author=author)
