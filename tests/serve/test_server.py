"""The app under a real uvicorn on 127.0.0.1: streaming over TCP, a disconnect cancels the run."""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest

from raf.serve import create_app
from raf.stores import MemoryCheckpointStore
from tests.serve.events import parse, text_of
from tests.serve.servers import running
from tests.serve.trees import Stalling, newsroom, run_input, user

pytestmark = pytest.mark.anyio


async def test_a_run_streams_over_http() -> None:
    with running(create_app(newsroom(), MemoryCheckpointStore())) as url:
        async with httpx2.AsyncClient(base_url=url, timeout=10) as http:
            response = await http.post(
                "/agents/newsroom/run", json=run_input("t", user("u", "the city library"))
            )
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-store"
    events = parse(response.text)
    assert events[-1]["outcome"]["interrupts"][0]["id"] == "newsroom/review@1#0~1"
    assert text_of(events, "researcher") == "Founded in 1911, three branches."


async def test_a_client_that_disconnects_cancels_the_run() -> None:
    staller = Stalling()
    with running(create_app(staller.agent, MemoryCheckpointStore())) as url:
        port = int(url.rsplit(":", 1)[1])
        body = json.dumps(run_input("thread", user("u1", "go"))).encode()
        request = (
            b"POST /agents/staller/run HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        received = b""
        with anyio.fail_after(10):
            # A plain socket: the client leaves exactly when the test says, mid-run.
            async with await anyio.connect_tcp("127.0.0.1", port) as client:
                await client.send(request)
                while b'"delta":"thinking"' not in received:
                    received += await client.receive()
                assert not staller.cancelled.is_set()  # the run streams, and waits
        cancelled = await anyio.to_thread.run_sync(staller.cancelled.wait, 10)
        assert cancelled, "the run went on after its client left"
        async with httpx2.AsyncClient(base_url=url, timeout=10) as http:
            # The thread is free again: the next run on it is not refused as busy.
            again = await http.post(
                "/agents/staller/run", json=run_input("thread", user("u2", "again"))
            )
    events = parse(again.text)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert text_of(events, "staller") == "back again"


async def test_the_token_is_enforced_over_http() -> None:
    app = create_app(newsroom(), MemoryCheckpointStore(), token="s3cret")
    with running(app) as url:
        async with httpx2.AsyncClient(base_url=url, timeout=10) as http:
            anonymous = await http.post("/agents/newsroom/run", json=run_input("t", user("u", "x")))
            listed = await http.get("/agents", headers={"Authorization": "Bearer s3cret"})
            page = await http.get("/")
    assert anonymous.status_code == 401
    assert listed.status_code == 200
    assert page.status_code == 200
