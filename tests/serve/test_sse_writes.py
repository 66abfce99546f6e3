"""The run route writes every event that is ready in one body chunk, and holds none back.

The app is called as uvicorn calls it (ASGI), so each `http.response.body` message it sends
is one write to the client's socket.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from ag_ui.core import TextMessageContentEvent
from ag_ui.encoder import EventEncoder
from hypothesis import given
from hypothesis import strategies as st
from starlette.types import Message

from raf import FunctionAgent
from raf.messages import ChatMessage
from raf.serve import create_app
from raf.serve.agui import run_response
from raf.serve.agui.mapper import text_content
from raf.serve.agui.streaming import encode
from raf.stores import MemoryCheckpointStore
from tests.serve.events import check_order, parse
from tests.serve.trees import run_input, user

pytestmark = pytest.mark.anyio

_BURST = ["a", "b", "c"]
_PACED = ["p0", "p1", "p2", "p3"]


class Client:
    """The ASGI side of one request: its body, then what the app writes, write by write."""

    def __init__(self, body: dict[str, Any]) -> None:
        self._body = json.dumps(body).encode()
        self.writes: list[bytes] = []
        self._arrived: dict[str, anyio.Event] = {}
        self.gone = anyio.Event()
        """Set when the client goes away (or the response has ended)."""
        self.pinged = anyio.Event()

    def arrived(self, delta: str) -> anyio.Event:
        """Set once a write has carried the token `delta`."""
        return self._arrived.setdefault(delta, anyio.Event())

    async def receive(self) -> Message:
        if self._body:
            body, self._body = self._body, b""
            return {"type": "http.request", "body": body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] != "http.response.body":
            return
        chunk: bytes = message.get("body", b"")
        if chunk:
            self.writes.append(chunk)
            if chunk.startswith(b":"):
                self.pinged.set()
            for event in parse(chunk.decode()):
                if event["type"] == "TEXT_MESSAGE_CONTENT":
                    self.arrived(event["delta"]).set()
        if not message.get("more_body", False):
            self.gone.set()


_SCOPE: dict[str, Any] = {
    "type": "http",
    "asgi": {"version": "3.0", "spec_version": "2.4"},
    "http_version": "1.1",
    "method": "POST",
    "scheme": "http",
    "path": "/agents/writer/run",
    "raw_path": b"/agents/writer/run",
    "query_string": b"",
    "root_path": "",
    "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
    "client": ("127.0.0.1", 50000),
    "server": ("127.0.0.1", 8000),
}


async def test_ready_events_go_in_one_write_and_no_token_waits_for_the_next() -> None:
    client = Client(run_input("t1", user("u1", "go")))

    async def model(messages: list[ChatMessage]) -> AsyncIterator[str]:
        for delta in _BURST:  # ready at once: nothing runs between them
            yield delta
        for delta in _PACED:
            # The next chunk only once the client has the last one: a token held back for
            # company would never come.
            await client.arrived("c" if delta == "p0" else _PACED[_PACED.index(delta) - 1]).wait()
            yield delta

    app = create_app(FunctionAgent("writer", model), store=MemoryCheckpointStore())
    with anyio.fail_after(10):
        await app(_SCOPE, client.receive, client.send)

    events = parse(b"".join(client.writes).decode())
    check_order(events)
    deltas = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert deltas == [*_BURST, *_PACED]
    burst = [w for w in client.writes if b'"delta":"a"' in w]
    assert len(burst) == 1
    assert all(f'"delta":"{d}"'.encode() in burst[0] for d in _BURST), burst
    for delta in _PACED:  # each alone: written before the model made the next
        (write,) = [w for w in client.writes if f'"delta":"{delta}"'.encode() in w]
        assert write.count(b'"type":"TEXT_MESSAGE_CONTENT"') == 1


async def test_a_quiet_stream_gets_a_comment_line_now_and_then(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(run_response, "PING_SECONDS", 0.01)
    client = Client(run_input("t1", user("u1", "go")))

    async def model(messages: list[ChatMessage]) -> AsyncIterator[str]:
        yield "a"
        await client.pinged.wait()  # quiet until the client has had a ping
        yield "b"

    app = create_app(FunctionAgent("writer", model), store=MemoryCheckpointStore())
    with anyio.fail_after(10):
        await app(_SCOPE, client.receive, client.send)
    body = b"".join(client.writes).decode()
    assert ": ping\n\n" in body
    events = parse(body)
    check_order(events)
    assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["a", "b"]


async def test_a_client_that_leaves_cancels_its_run_which_frees_the_thread() -> None:
    client = Client(run_input("t1", user("u1", "go")))
    cancelled = anyio.Event()

    async def model(messages: list[ChatMessage]) -> AsyncIterator[str]:
        yield "a"
        if not cancelled.is_set():  # the first run waits for what never comes
            try:
                await anyio.sleep_forever()
            finally:
                cancelled.set()

    async def leave() -> None:
        await client.arrived("a").wait()
        client.gone.set()

    app = create_app(FunctionAgent("writer", model), store=MemoryCheckpointStore())
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(leave)
            await app(_SCOPE, client.receive, client.send)
        assert cancelled.is_set()
        again = Client(run_input("t1", user("u2", "again")))
        await app(_SCOPE, again.receive, again.send)
    events = parse(b"".join(again.writes).decode())
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]


@given(
    st.text(),
    st.text(min_size=1, max_size=40),
    st.one_of(st.none(), st.text(min_size=1, max_size=40)),
)
def test_a_text_delta_is_built_and_written_as_the_ag_ui_sdk_does(
    delta: str, message_id: str, owner: str | None
) -> None:
    made = text_content(message_id, delta, owner)
    validated = TextMessageContentEvent(message_id=message_id, delta=delta, subagent_run_id=owner)
    assert made == validated
    assert made.model_fields_set == validated.model_fields_set
    assert made.model_extra == validated.model_extra
    assert encode(made) == EventEncoder().encode(validated).encode()
