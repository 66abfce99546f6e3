"""`BoundedH11Protocol`: uvicorn's HTTP/1.1 protocol, with a bound on how long a client may
take to send a request's headers.

uvicorn waits for a request line and headers for ever: its keep-alive timer is reset by every
byte, so a client sending one byte every few seconds holds a connection open indefinitely (a
slowloris), and a few hundred of them hold the server's file descriptors. This protocol gives
every request `header_timeout` seconds from the moment the connection is ready for it (opened,
or its previous response sent) to deliver its whole head, then closes the connection. A body
is bounded apart, by the app (`GuardMiddleware`'s `body_timeout`), and a response that streams
for long (a run's SSE) is not touched: once the head has arrived, the timer has nothing to do.

uvicorn runs on asyncio, and this is part of its protocol: its timer is the loop's own
`call_later`, as uvicorn's keep-alive timer is.

Example:
    >>> import uvicorn
    >>> from starlette.applications import Starlette
    >>> config = uvicorn.Config(Starlette(), http=bounded_protocol(header_timeout=10.0))
"""

from __future__ import annotations

from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DEFAULT_HEADER_TIMEOUT", "BoundedH11Protocol", "bounded_protocol"]

DEFAULT_HEADER_TIMEOUT = 10.0
"""Seconds a client has to send a request's line and headers."""


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol closing a connection whose request head is late (see the module)."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: Any = None

    def connection_made(self, transport: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self.header_timeout, self._head_late)

    def _disarm(self) -> None:
        timer, self._head_timer = self._head_timer, None
        if timer is not None:
            timer.cancel()

    def _head_late(self) -> None:
        self._head_timer = None
        # Still waiting for (the rest of) a request's head: the client had its time.
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def bounded_protocol(header_timeout: float = DEFAULT_HEADER_TIMEOUT) -> type[BoundedH11Protocol]:
    """A `BoundedH11Protocol` class giving clients `header_timeout` seconds for a head.

    Raises:
        ValueError: when `header_timeout` is not positive.
    """
    if not header_timeout > 0:
        raise ValueError(f"header_timeout is a number of seconds above 0, not {header_timeout!r}")
    return type("BoundedH11Protocol", (BoundedH11Protocol,), {"header_timeout": header_timeout})
