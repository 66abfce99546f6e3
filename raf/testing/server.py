"""`ScriptedOpenAIServer`: scripted model turns served over real HTTP, OpenAI style.

It speaks the chat-completions API (streamed as server-sent events, or whole) on
127.0.0.1 and an ephemeral port, so the real `openai` client, and `OpenAIProvider` on it,
can be tested offline. It runs on asyncio and trio.

Example:
    >>> from raf import ChatMessage
    >>> from raf.providers.openai import OpenAIProvider, create_client
    >>> from raf.testing import text
    >>> async def main() -> str:
    ...     async with ScriptedOpenAIServer([text("Hello")]) as server:
    ...         async with create_client(server.base_url, "test-key") as client:
    ...             provider = OpenAIProvider(client, "scripted")
    ...             async with provider.stream([ChatMessage.user("hi")]) as events:
    ...                 return [e async for e in events][-1].text
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
import time
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, Self, cast

import anyio
from anyio import CancelScope
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from pydantic import ValidationError

from raf.messages import ChatMessage
from raf.providers._chat_format import from_chat_completions
from raf.testing._http import (
    BadRequest,
    HttpRequest,
    end_event_stream,
    read_request,
    send_event,
    send_json,
    start_event_stream,
)
from raf.testing._wire import Reply, calls_as_text, error_body
from raf.testing.quirks import Quirks
from raf.testing.script import Script, Turn, TurnPicker, turn_usage
from raf.tools.definition import ToolDefinition

_CONNECTION_ERRORS = (
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.DelimiterNotFound,
    OSError,
)


@dataclass(frozen=True, slots=True)
class ServerRequest:
    """One chat-completions call the server received."""

    body: dict[str, Any]
    """The JSON body as sent."""
    messages: list[ChatMessage]
    """The body's messages as raf messages."""
    tools: list[ToolDefinition]
    """The body's function tools."""
    response_format: dict[str, Any] | None
    """The body's response format, if any."""
    headers: dict[str, str]
    """The HTTP headers, names lower-cased."""


class ScriptedOpenAIServer:
    """An OpenAI-compatible HTTP server answering each chat call with the next scripted turn.

    Serves `POST /v1/chat/completions` (streamed when the body asks for `stream`, with a usage
    chunk when `stream_options.include_usage` is set) and `GET /v1/models`; anything else gets
    404. Error turns answer with their status, an OpenAI error body and their headers (or reset
    the connection, with `reset`); `delay` waits before answering; `truncate` cuts the
    connection before the final chunk.

    Args:
        script: turns played in order, or a function `(messages) -> Turn` called per call.
        model: the model name the answers carry.
        chunk_delay: seconds to wait between streamed chunks (a slow model).
        quirks: behaviours of other OpenAI-compatible servers to imitate (`Quirks`):
            continuing a trailing assistant message, tool calls written as text, and more.

    Attributes:
        requests: every chat call received, in order.
        disconnects: how many responses the client abandoned before they were complete.

    A script that runs out of turns (or raises) answers HTTP 400 and the error is raised
    again when the server exits.

    Example:
        >>> async def main() -> None:
        ...     async with ScriptedOpenAIServer([text("hi")]) as server:
        ...         print(server.base_url)  # http://127.0.0.1:PORT/v1
    """

    def __init__(
        self,
        script: Script,
        *,
        model: str = "scripted",
        chunk_delay: float = 0.0,
        quirks: Quirks | None = None,
    ) -> None:
        if chunk_delay < 0:
            raise ValueError(f"chunk_delay must not be negative, got {chunk_delay}")
        self._quirks = quirks or Quirks()
        self._picker = TurnPicker(script)
        self._model = model
        self._chunk_delay = chunk_delay
        self._call_ids = itertools.count(1)
        self._completion_ids = itertools.count(1)
        self._port: int | None = None
        self._stack: AsyncExitStack | None = None
        self._disconnected: anyio.Event | None = None
        self._failures: list[Exception] = []
        self.requests: list[ServerRequest] = []
        self.disconnects = 0

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`, the client's base URL; known once the server runs."""
        if self._port is None:
            raise RuntimeError(
                "the server is not running; use `async with ScriptedOpenAIServer(...)`"
            )
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def calls(self) -> int:
        """How many turns were handed out."""
        return self._picker.calls

    @property
    def disconnected(self) -> anyio.Event:
        """Set when a client first abandons a response before it is complete."""
        if self._disconnected is None:
            raise RuntimeError(
                "the server is not running; use `async with ScriptedOpenAIServer(...)`"
            )
        return self._disconnected

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise RuntimeError("the server is already running")
        self._disconnected = anyio.Event()
        async with AsyncExitStack() as stack:
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
            await stack.enter_async_context(listener)
            task_group = await stack.enter_async_context(anyio.create_task_group())
            # Callbacks run last-in first-out: the serving tasks are cancelled before the
            # task group waits for them.
            stack.callback(task_group.cancel_scope.cancel)
            task_group.start_soon(listener.serve, self._serve_connection, task_group)
            self._port = listener.extra(SocketAttribute.local_port)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        self._port = None
        if stack is not None:
            # The body's own exception is not fed to the task group, which would wrap it in a
            # group (on trio): returning lets it out as itself.
            await stack.__aexit__(None, None, None)
        if exc is None and self._failures:
            raise self._failures[0]

    async def _serve_connection(self, stream: SocketStream) -> None:
        async with stream:
            reader = BufferedByteReceiveStream(stream)
            try:
                while True:
                    try:
                        request = await read_request(reader)
                    except BadRequest as bad:
                        await send_json(stream, 400, error_body(400, str(bad)), keep_alive=False)
                        return
                    if not await self._route(stream, reader, request) or not request.keep_alive:
                        return
            except _CONNECTION_ERRORS:
                return

    async def _route(
        self, stream: SocketStream, reader: BufferedByteReceiveStream, request: HttpRequest
    ) -> bool:
        """Answer one request; False when the connection must close."""
        if request.method == "POST" and request.path.endswith("/chat/completions"):
            return await self._chat(stream, reader, request)
        if request.method == "GET" and request.path.endswith("/models"):
            models = {"object": "list", "data": [{"id": self._model, "object": "model"}]}
            await send_json(stream, 200, models)
            return True
        message = f"no route for {request.method} {request.path}"
        await send_json(stream, 404, error_body(404, message, code="not_found"))
        return True

    async def _chat(
        self, stream: SocketStream, reader: BufferedByteReceiveStream, request: HttpRequest
    ) -> bool:
        try:
            recorded = _parse_chat(request)
        except (ValueError, ValidationError) as exc:
            await send_json(stream, 400, error_body(400, f"invalid request body: {exc}"))
            return True
        self.requests.append(recorded)
        refusal = self._refusal(recorded)
        if refusal is not None:
            await send_json(stream, 400, error_body(400, refusal))
            return True
        try:
            turn = self._quirky(self._picker.next(recorded.messages), recorded)
        except Exception as exc:
            self._failures.append(exc)
            await send_json(stream, 400, error_body(400, str(exc), code="script_failed"))
            return True
        return await self._answer_watched(stream, reader, turn, recorded)

    def _refusal(self, request: ServerRequest) -> str | None:
        """Why a server with these quirks answers the request with HTTP 400, if it does."""
        quirks = self._quirks
        kind = (request.response_format or {}).get("type")
        if kind in quirks.refused_response_formats:
            return f"response_format type {kind!r} is not supported by this server"
        roles = [m.role for m in request.messages[-2:]]
        if quirks.refuse_trailing_assistants and roles == ["assistant", "assistant"]:
            return "Cannot have 2 or more assistant messages at the end of the list"
        return None

    def _quirky(self, turn: Turn, request: ServerRequest) -> Turn:
        """The turn as a server with these quirks would answer it."""
        quirks = self._quirks
        if quirks.tool_calls_as_text is not None:
            turn = calls_as_text(turn, quirks.tool_calls_as_text)
        last = request.messages[-1] if request.messages else None
        if quirks.prefill and turn.kind == "text" and last is not None and last.role == "assistant":
            turn = replace(turn, text=last.text + turn.text)
        return turn

    async def _answer_watched(
        self,
        stream: SocketStream,
        reader: BufferedByteReceiveStream,
        turn: Turn,
        request: ServerRequest,
    ) -> bool:
        """Answer while watching the connection, stopping as soon as the client leaves."""
        keep_open: bool | None = None
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(_watch_for_hangup, reader, task_group.cancel_scope)
            with suppress(*_CONNECTION_ERRORS):
                keep_open = await self._answer(stream, turn, request)
            task_group.cancel_scope.cancel()
        if keep_open is None:
            self.disconnects += 1
            self.disconnected.set()
            return False
        return keep_open

    async def _answer(self, stream: SocketStream, turn: Turn, request: ServerRequest) -> bool:
        if turn.delay:
            await anyio.sleep(turn.delay)
        if turn.reset:
            # Close with a zero linger time: the kernel answers with RST, not FIN.
            raw = stream.extra(SocketAttribute.raw_socket)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return False
        if turn.kind == "error":
            await send_json(
                stream, turn.status, error_body(turn.status, turn.message), headers=turn.headers
            )
            return True
        reply = Reply(
            turn=turn,
            model=self._model,
            completion_id=f"chatcmpl-{next(self._completion_ids)}",
            created=int(time.time()),
            call_ids=tuple(c.call_id or f"call_{next(self._call_ids)}" for c in turn.calls),
            usage=turn_usage(turn, request.messages),
            repeat_tool_name=self._quirks.repeat_tool_name,
            omit_finish_reason=self._quirks.omit_finish_reason,
        )
        if request.body.get("stream") is not True:
            return await _send_completion(stream, reply)
        await start_event_stream(stream, headers={"x-request-id": reply.completion_id})
        for chunk in reply.content_chunks():
            await self._send_chunk(stream, chunk)
        if turn.truncate:
            return False
        options = request.body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(
            cast(dict[str, Any], options).get("include_usage")
        )
        for chunk in reply.closing_chunks(include_usage=include_usage):
            await self._send_chunk(stream, chunk)
        await send_event(stream, "[DONE]")
        await end_event_stream(stream)
        return True

    async def _send_chunk(self, stream: SocketStream, chunk: dict[str, Any]) -> None:
        if self._chunk_delay:
            await anyio.sleep(self._chunk_delay)
        await send_event(stream, json.dumps(chunk))


async def _send_completion(stream: SocketStream, reply: Reply) -> bool:
    body = json.dumps(reply.completion()).encode()
    if not reply.turn.truncate:
        await send_json(stream, 200, reply.completion())
        return True
    # Announce the whole body, send half of it, and hang up.
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    await stream.send(head + body[: len(body) // 2])
    return False


async def _watch_for_hangup(reader: BufferedByteReceiveStream, scope: CancelScope) -> None:
    # Clients do not pipeline requests, so anything readable mid-answer means the client
    # closed (or broke) the connection.
    with suppress(*_CONNECTION_ERRORS):
        await reader.receive()
    scope.cancel()


def _parse_chat(request: HttpRequest) -> ServerRequest:
    body = json.loads(request.body or b"null")
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    body = cast(dict[str, Any], body)
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not all(
        isinstance(m, dict) for m in cast(list[Any], raw_messages)
    ):
        raise ValueError("'messages' must be a list of objects")
    messages = from_chat_completions(cast(list[dict[str, Any]], raw_messages))
    tools: list[ToolDefinition] = []
    for raw in cast(list[Any], body.get("tools") or []):
        if not isinstance(raw, dict) or "function" not in raw:
            raise ValueError(f"unsupported tool {raw!r}")
        tools.append(ToolDefinition.model_validate(cast(dict[str, Any], raw)["function"]))
    response_format = body.get("response_format")
    return ServerRequest(
        body=body,
        messages=messages,
        tools=tools,
        response_format=cast(dict[str, Any], response_format)
        if isinstance(response_format, dict)
        else None,
        headers=dict(request.headers),
    )
