"""Reading the `data:` payloads of a server-sent-events response body."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncGenerator
from contextlib import suppress

import anyio
import httpx2

# Upper bound on finishing the byte iterators of a closed response (normally immediate).
_FINISH_SECONDS = 1.0


class SseDecoder:
    """Splits bytes into events and keeps each event's data (lines joined by newlines).

    The data stay bytes: they are decoded one event at a time as they are read, so that the
    events before a line that is not UTF-8 come out no matter how the body was split.
    """

    __slots__ = ("_buffer", "_data", "_pending_cr")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data: list[bytes] = []
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """The data of every event `chunk` completes."""
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._pending_cr = chunk.endswith(b"\r")
        self._buffer += chunk
        payloads: list[bytes] = []
        lines = bytes(self._buffer).replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        self._buffer = bytearray(lines.pop())
        for line in lines:
            if not line:
                if self._data:
                    payloads.append(b"\n".join(self._data))
                    self._data = []
                continue
            name, _, value = line.partition(b":")
            if name == b"data":
                self._data.append(value.removeprefix(b" "))
        return payloads


class SseReader:
    """The event payloads of a streamed response, one at a time.

    Transport failures surface as the raw `httpx2`/`anyio` exceptions, a body that is not
    UTF-8 as `UnicodeDecodeError`; `aclose` releases the byte iterator and the response.
    """

    def __init__(self, response: httpx2.Response) -> None:
        self._response = response
        self._bytes: AsyncGenerator[bytes] = response.aiter_bytes()
        self._decoder = SseDecoder()
        self._payloads: deque[bytes] = deque()
        self._started = False
        self.exhausted = False
        """True once the body ended."""

    async def next_payload(self) -> str | None:
        """The next event's data, or None when the body ended.

        Raises:
            UnicodeDecodeError: the event's data are not UTF-8.
        """
        if not await self._fill():
            return None
        return self._payloads.popleft().decode("utf-8")

    async def peek(self) -> None:
        """Read until one payload is buffered or the body ended."""
        await self._fill()

    async def _fill(self) -> bool:
        """Read until one payload is buffered (True) or the body ended (False)."""
        while not self._payloads:
            if self.exhausted:
                return False
            self._started = True
            try:
                chunk = await anext(self._bytes)
            except StopAsyncIteration:
                self.exhausted = True
                return False
            self._payloads.extend(self._decoder.feed(chunk))
        return True

    async def aclose(self) -> None:
        """Stop reading and release the connection."""
        try:
            await self._response.aclose()
            if self._started and not self.exhausted:
                # Closing httpx2's body iterator early leaves the transport's inner iterator
                # suspended, and trio warns when that is collected. Reading on from the closed
                # response fails at once instead, which finishes every nested iterator.
                with anyio.move_on_after(_FINISH_SECONDS), suppress(Exception):
                    while True:
                        await anext(self._bytes)
        finally:
            await self._bytes.aclose()
