"""`check_lines` frames an ACP client's lines itself: whole up to the bound, however the input
is cut into chunks; a longer line dropped as it is read and answered with its request's id."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raf.serve.acp.lines import check_lines, request_id_of

pytestmark = pytest.mark.anyio


class Chunks:
    """Input arriving in the chunks given."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def read(self, n: int = -1, /) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""


class Fed:
    def __init__(self) -> None:
        self.data = b""
        self.ended = False

    def feed_data(self, data: bytes) -> None:
        self.data += data

    def feed_eof(self) -> None:
        self.ended = True


class Written:
    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.replies.extend(json.loads(line) for line in data.splitlines())

    async def drain(self) -> None:
        return None


def cut(data: bytes, sizes: list[int]) -> list[bytes]:
    chunks: list[bytes] = []
    for size in sizes:
        if not data:
            break
        chunks.append(data[:size])
        data = data[size:]
    return [*chunks, data] if data else chunks


async def framed(data: bytes, sizes: list[int], limit: int) -> tuple[Fed, Written]:
    fed, written = Fed(), Written()
    await check_lines(Chunks(cut(data, sizes)), fed, written, limit=limit)
    return fed, written


@given(st.lists(st.integers(1, 50), min_size=1, max_size=20))
async def test_lines_come_through_whole_however_the_input_is_cut(sizes: list[int]) -> None:
    first = json.dumps({"id": 1, "method": "a"}).encode()
    second = json.dumps({"id": 2, "method": "b", "params": {"t": "z" * 40}}).encode()
    fed, written = await framed(first + b"\n\n" + second + b"\n", sizes, limit=200)
    assert fed.data == first + b"\n\n" + second + b"\n" and fed.ended
    assert written.replies == []


@given(st.lists(st.integers(1, 64), min_size=1, max_size=30))
async def test_a_line_over_the_bound_is_answered_with_its_id(sizes: list[int]) -> None:
    long = json.dumps({"jsonrpc": "2.0", "id": "p-7", "params": {"t": "x" * 300}}).encode()
    after = json.dumps({"id": 8}).encode()
    fed, written = await framed(long + b"\n" + after + b"\n", sizes, limit=100)
    assert fed.data == after + b"\n"
    [error] = written.replies
    assert error["id"] == "p-7" and error["error"]["code"] == -32600


async def test_a_last_line_without_its_newline_is_passed_on() -> None:
    fed, written = await framed(b'{"id": 1}', [4], limit=100)
    assert (fed.data, fed.ended, written.replies) == (b'{"id": 1}', True, [])


def test_a_request_id_is_read_off_the_start_of_a_message() -> None:
    assert request_id_of(b'{"jsonrpc": "2.0", "id": 12, "params": {"t": "x') == 12
    assert request_id_of(b'{"id": "a\\"b", "x') == 'a"b'
    assert request_id_of(b'{"method": "session/prompt"') is None
