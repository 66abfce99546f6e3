"""`check_lines`: the lines of an ACP client, each a JSON object, or answered with an error.

The SDK's reader takes every line for a JSON-RPC message: a line that is JSON but not an
object (`[]`, a batch, `"s"`, `42`) crashes its loop, `null` reads as the end of input, and
a line that is not JSON is logged and gets no answer. `check_lines` stands between stdin and
the SDK: it passes on the lines that hold a JSON object and answers the others itself, as
JSON-RPC 2.0 says — `-32700` (parse error) for a line that is not JSON, `-32600` (invalid
request) for one that is not an object — then reads on.

It frames the lines itself, reading chunks rather than asking the stream for a line (a stream
refuses a line longer than its buffer, and then cannot say which request it was): a line of up
to `MAX_LINE_BYTES` (50 MiB, the SDK's own bound; an embedded file of a prompt) is read whole;
a longer one is read through and dropped, never held in memory, and answered with `-32600`
naming its request's id when its first bytes say it, so the client that sent it is not left
waiting for an answer.

Example:
    >>> error_for(b"[]")["error"]["code"], error_for(b"oops")["error"]["code"]
    (-32600, -32700)
    >>> error_for(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"}') is None
    True
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

__all__ = ["MAX_LINE_BYTES", "check_lines", "error_for", "request_id_of"]

MAX_LINE_BYTES = 50 * 1024 * 1024
"""The longest line (one JSON-RPC message) read whole: the ACP SDK's own bound."""

_CHUNK = 64 * 1024
_HEAD = 4096  # the bytes of a dropped line searched for its request's id
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


class _ChunkReader(Protocol):
    async def read(self, n: int = -1, /) -> bytes: ...


class _Feed(Protocol):
    def feed_data(self, data: bytes) -> None: ...

    def feed_eof(self) -> None: ...


class _Writer(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


def error_for(line: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error answering `line`, or None when it holds a JSON object."""
    try:
        message = json.loads(line)
    except ValueError as exc:
        return _error(-32700, "Parse error", f"the line is not JSON ({exc})")
    if isinstance(message, dict):
        return None
    what = "a batch" if isinstance(message, list) else f"JSON {type(message).__name__}"
    if message is None:
        what = "null"
    return _error(
        -32600,
        "Invalid Request",
        f"a message is one JSON object per line, not {what} (batches are not supported)",
    )


async def check_lines(
    reader: _ChunkReader, checked: _Feed, writer: _Writer, *, limit: int = MAX_LINE_BYTES
) -> None:
    """Pass the lines of `reader` that hold a JSON object (or are blank) on to `checked`,
    answering the others through `writer`, until the end of input; a line longer than `limit`
    bytes is dropped as it is read, and answered with an error naming its request."""
    line = bytearray()
    dropped: bytes | None = None  # the head of a line too long to keep, while it is read
    while True:
        chunk = await reader.read(_CHUNK)
        if not chunk:
            if dropped is not None:
                await _answer(writer, _too_long(dropped, limit))
            elif line.strip():
                await _pass(bytes(line), checked, writer)
            checked.feed_eof()
            return
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start : end + 1]
            start += len(piece)
            if dropped is None:
                line += piece
                if len(line) > limit + 1:  # (the newline is not the message's)
                    dropped = bytes(line[:_HEAD])
                    line.clear()
            if end < 0:
                break
            if dropped is not None:
                await _answer(writer, _too_long(dropped, limit))
                dropped = None
            else:
                await _pass(bytes(line), checked, writer)
                line.clear()


async def _pass(line: bytes, checked: _Feed, writer: _Writer) -> None:
    error = error_for(line) if line.strip() else None
    if error is None:
        checked.feed_data(line)
    else:
        await _answer(writer, error)


def request_id_of(head: bytes) -> int | str | None:
    """The request id the first bytes of a message name, or None.

    Example:
        >>> request_id_of(b'{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "par')
        3
    """
    found = _ID.search(head)
    if found is None:
        return None
    try:
        value: Any = json.loads(found.group(1))
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None


def _too_long(head: bytes, limit: int) -> dict[str, Any]:
    error = _error(
        -32600,
        "Invalid Request",
        f"the message is longer than the {limit} bytes a line may have; send less (a "
        "resource link instead of an embedded file, say)",
    )
    error["id"] = request_id_of(head)
    return error


async def _answer(writer: _Writer, error: dict[str, Any]) -> None:
    writer.write(json.dumps(error).encode() + b"\n")
    await writer.drain()


def _error(code: int, message: str, details: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": code, "message": message, "data": {"details": details}},
    }
