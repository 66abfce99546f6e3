"""Just enough HTTP/1.1 for a local test server: read requests, write responses."""

from __future__ import annotations

import json
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from anyio.abc import ByteSendStream
from anyio.streams.buffered import BufferedByteReceiveStream

_MAX_HEAD = 64 * 1024
_MAX_BODY = 64 * 1024 * 1024


class BadRequest(Exception):
    """The client sent something this server cannot read."""


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One parsed request."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: bytes

    @property
    def keep_alive(self) -> bool:
        """Whether the client wants the connection kept open afterwards."""
        return self.headers.get("connection", "").lower() != "close"


async def read_request(reader: BufferedByteReceiveStream) -> HttpRequest:
    """Read one request; raises `anyio.IncompleteRead` when the client closed the connection."""
    head = await reader.receive_until(b"\r\n\r\n", _MAX_HEAD)
    request_line, *lines = head.decode("latin-1").split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"malformed request line {request_line!r}")
    method, target, _ = parts
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep:
            raise BadRequest(f"malformed header line {line!r}")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise BadRequest("chunked request bodies are not supported; send Content-Length")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise BadRequest("malformed Content-Length") from None
    if not 0 <= length <= _MAX_BODY:
        raise BadRequest(f"Content-Length {length} out of range")
    body = await reader.receive_exactly(length) if length else b""
    return HttpRequest(method, target.split("?", 1)[0], headers, body)


def _status_line(status: int) -> str:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    return f"HTTP/1.1 {status} {phrase}\r\n"


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [_status_line(status)]
    lines += [f"{name}: {value}\r\n" for name, value in headers.items()]
    lines.append("\r\n")
    return "".join(lines).encode("latin-1")


async def send_json(
    stream: ByteSendStream,
    status: int,
    body: Any,
    *,
    headers: dict[str, str] | None = None,
    keep_alive: bool = True,
) -> None:
    """Write a whole JSON response."""
    payload = json.dumps(body).encode()
    all_headers = {
        "content-type": "application/json",
        "content-length": str(len(payload)),
        "connection": "keep-alive" if keep_alive else "close",
        **(headers or {}),
    }
    await stream.send(_head(status, all_headers) + payload)


async def start_event_stream(stream: ByteSendStream, *, headers: dict[str, str]) -> None:
    """Write the head of a chunked `text/event-stream` response."""
    all_headers = {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        "transfer-encoding": "chunked",
        "connection": "keep-alive",
        **headers,
    }
    await stream.send(_head(200, all_headers))


async def send_event(stream: ByteSendStream, data: str) -> None:
    """Write one server-sent event `data: ...` as one HTTP chunk."""
    payload = f"data: {data}\n\n".encode()
    await stream.send(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")


async def end_event_stream(stream: ByteSendStream) -> None:
    """Write the last, empty HTTP chunk."""
    await stream.send(b"0\r\n\r\n")
