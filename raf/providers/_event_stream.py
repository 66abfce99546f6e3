"""The provider events of one streamed chat-completions response."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any, cast

import anyio

from raf.providers._chunks import ChunkAssembler
from raf.providers._failures import Failure, classify, stream_broke, stream_cut, stream_error
from raf.providers._sse import SseReader
from raf.providers.base import Completion, ProviderEvent

# After `[DONE]` only the body's end remains; waiting briefly for it keeps the connection
# reusable, and the wait is bounded so a server that holds the body open costs little.
_DRAIN_SECONDS = 0.1

Reconnect = Callable[[int, Failure], Awaitable[tuple[SseReader, int]]]
"""Open the call again after `attempts` attempts, the last of which failed with `failure`."""


class EventStream:
    """Events assembled from the chunks of a response, as they arrive.

    A transient failure before any event was yielded reopens the call through `reconnect`
    (which applies the retry policy); once output was yielded, a failure raises
    `ProviderError`. `aclose` releases the response.
    """

    def __init__(self, model: str, reader: SseReader, attempts: int, reconnect: Reconnect) -> None:
        self._model = model
        self._reader = reader
        self._attempts = attempts
        self._reconnect = reconnect
        self._assembler = ChunkAssembler()
        self._pending: deque[ProviderEvent] = deque()
        self._yielded = False
        self._done = False
        self._clean_end = False

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> ProviderEvent:
        while not self._pending:
            if self._done:
                raise StopAsyncIteration
            try:
                await self._pull()
            except BaseException:
                self._done = True
                raise
        self._yielded = True
        return self._pending.popleft()

    async def _pull(self) -> None:
        try:
            payload = await self._reader.next_payload()
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            if self._yielded:
                raise stream_broke(self._model, exc, self._attempts) from exc
            await self._reader.aclose()
            self._reader, self._attempts = await self._reconnect(self._attempts, failure)
            self._assembler = ChunkAssembler()
            return
        if payload is None or payload.startswith("[DONE]"):
            self._done = True
            self._clean_end = payload is not None
            self._pending.extend(self._finish())
            return
        try:
            chunk = json.loads(payload)
        except ValueError as exc:
            raise stream_broke(self._model, exc, self._attempts) from exc
        if isinstance(chunk, dict) and "error" in chunk:
            raise stream_error(self._model, cast(dict[str, Any], chunk), self._attempts)
        if isinstance(chunk, dict):
            self._pending.extend(self._assembler.feed(cast(dict[str, Any], chunk)))

    def _finish(self) -> list[ProviderEvent]:
        events = self._assembler.finish()
        completion = events[-1]
        if isinstance(completion, Completion) and completion.finish_reason is None:
            raise stream_cut(self._model, self._attempts, done=self._clean_end)
        return events

    async def aclose(self) -> None:
        """Release the response; after a clean end, read its last bytes first so that the
        connection can be reused."""
        self._done = True
        if self._clean_end and not self._reader.exhausted:
            with anyio.move_on_after(_DRAIN_SECONDS), suppress(Exception):
                while await self._reader.next_payload() is not None:
                    pass
        await self._reader.aclose()
