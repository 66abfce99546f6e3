"""`RunResponse`: the SSE response of one AG-UI run, the run played in the response's own task.

The run writes its events straight to the ASGI `send`: a token that arrives alone costs one
turn of the event loop (the run's) and one body write, with no task in between. Events that
are ready together go out in one write: the run holds them until it is about to wait
(`stream_run`'s `flush`). Beside the run, the response watches the client (it leaves: the
run is cancelled, and saves its thread as a cancelled run does), the server (it stops: the
run is told to end with `RUN_ERROR`, and cancelled after a grace period) and the clock (a
comment line every 15 seconds keeps proxies from closing a quiet stream).

Example:
    >>> async def play(send, flush):
    ...     await send(b"data: 1\\n\\n")
    >>> RunResponse(play, anyio.Event(), grace=5.0).headers["content-type"]
    'text/event-stream; charset=utf-8'
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
from sse_starlette import EventSourceResponse
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from raf._streaming import DONE, STREAM_BUFFER, single_exceptions

__all__ = ["PING_SECONDS", "RunResponse"]

PING_SECONDS = 15.0
"""How often a quiet stream gets a comment line (as sse-starlette's responses do)."""

_PING = b": ping\n\n"

SendBytes = Callable[[bytes], Awaitable[None]]
Flush = Callable[[], Awaitable[None]]
Play = Callable[[SendBytes, Flush], Awaitable[None]]
"""Plays the run: `send` takes each encoded event (held back until `flush`)."""


class RunResponse(Response):
    """Streams what `play` sends as `text/event-stream`, `play` running in the response's task.

    Args:
        play: the run; it is cancelled when the client goes away.
        stopping: set when the server stops; `play` is cancelled `grace` seconds later.
        grace: seconds a run gets to end itself once the server stops.
    """

    media_type = "text/event-stream"

    def __init__(self, play: Play, stopping: anyio.Event, *, grace: float) -> None:
        self.status_code = 200
        self.background = None
        self._play = play
        self._stopping = stopping
        self._grace = grace
        self.init_headers(
            {"Cache-Control": "no-store", "Connection": "keep-alive", "X-Accel-Buffering": "no"}
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        body = _Body(send)
        with single_exceptions():
            async with anyio.create_task_group() as group:
                cancel = group.cancel_scope.cancel
                group.start_soon(_left, receive, cancel)
                group.start_soon(self._stop, cancel)
                group.start_soon(_ping, body)
                await self._play(body.send, body.flush)
                cancel()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _stop(self, cancel: Callable[[], None]) -> None:
        # The server's stop, as sse-starlette's responses (the studio's) learn of it.
        await EventSourceResponse._listen_for_exit_signal()  # pyright: ignore[reportPrivateUsage]
        self._stopping.set()
        await anyio.sleep(self._grace)
        cancel()


async def _left(receive: Receive, cancel: Callable[[], None]) -> None:
    """Cancel the response once the client has gone away."""
    while (await receive())["type"] != "http.disconnect":
        pass
    cancel()


async def _ping(body: _Body) -> None:
    while True:
        await anyio.sleep(PING_SECONDS)
        await body.write(_PING)


class _Body:
    """The response body: events held until `flush`, which writes them in one message."""

    __slots__ = ("_held", "_send")

    def __init__(self, send: Send) -> None:
        self._send = send
        self._held: list[bytes] = []

    def send(self, event: bytes) -> Awaitable[None]:
        """Hold `event`; once `STREAM_BUFFER` are held, the result writes them."""
        held = self._held
        held.append(event)
        if len(held) >= STREAM_BUFFER:
            return self.flush()
        return DONE

    def flush(self) -> Awaitable[None]:
        """Write the held events (waits only while the client's connection is full)."""
        held = self._held
        if not held:
            return DONE
        chunk = b"".join(held)
        held.clear()
        return self.write(chunk)

    def write(self, chunk: bytes) -> Awaitable[None]:
        """Write `chunk` now."""
        return self._send({"type": "http.response.body", "body": chunk, "more_body": True})
