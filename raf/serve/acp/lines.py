"""`check_lines`: the lines of an ACP client, each a JSON object, or answered with an error.

The SDK's reader takes every line for a JSON-RPC message: a line that is JSON but not an
object (`[]`, a batch, `"s"`, `42`) crashes its loop, `null` reads as the end of input, and
a line that is not JSON is logged and gets no answer. `check_lines` stands between stdin and
the SDK: it passes on the lines that hold a JSON object and answers the others itself, as
JSON-RPC 2.0 says — `-32700` (parse error) for a line that is not JSON, `-32600` (invalid
request) for one that is not an object — then reads on.

Example:
    >>> error_for(b"[]")["error"]["code"], error_for(b"oops")["error"]["code"]
    (-32600, -32700)
    >>> error_for(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"}') is None
    True
"""

from __future__ import annotations

import json
from typing import Any, Protocol

__all__ = ["check_lines", "error_for"]


class _LineReader(Protocol):
    async def readline(self) -> bytes: ...


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


async def check_lines(reader: _LineReader, checked: _Feed, writer: _Writer) -> None:
    """Pass the lines of `reader` that hold a JSON object (or are blank) on to `checked`,
    answering the others through `writer`, until the end of input."""
    while True:
        try:
            line = await reader.readline()
        except ValueError:  # longer than the reader's limit: it skipped the line
            await _answer(writer, _error(-32600, "Invalid Request", "the line is too long"))
            continue
        if not line:
            checked.feed_eof()
            return
        error = error_for(line) if line.strip() else None
        if error is None:
            checked.feed_data(line)
        else:
            await _answer(writer, error)


async def _answer(writer: _Writer, error: dict[str, Any]) -> None:
    writer.write(json.dumps(error).encode() + b"\n")
    await writer.drain()


def _error(code: int, message: str, details: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": code, "message": message, "data": {"details": details}},
    }
