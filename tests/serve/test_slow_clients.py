"""A client cannot hold a connection open by sending its request slowly: its head is bounded by
the server's protocol (`raf.serve.agui.slow_clients`), its body by the app (408); every answer
forbids framing and foreign scripts; `raf serve` reads its token from a file or the
environment, never only from its command line."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
from starlette.types import Message

from raf import FunctionAgent
from raf.cli.commands import _serve_token  # pyright: ignore[reportPrivateUsage]
from raf.serve import create_app
from raf.serve.agui.guard import GuardMiddleware, RequestGuard
from raf.serve.agui.slow_clients import bounded_protocol
from raf.stores import MemoryCheckpointStore
from tests.serve.servers import running


def echo_app() -> Any:
    return create_app(FunctionAgent("echo", lambda m: m[-1].text), MemoryCheckpointStore())


def connect(url: str) -> socket.socket:
    where = urlsplit(url)
    sock = socket.create_connection((where.hostname or "127.0.0.1", where.port or 80), timeout=10)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed the connection (read until it says so, or 10 s pass)."""
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                return True
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_a_head_sent_too_slowly_closes_the_connection() -> None:
    with running(echo_app(), http=bounded_protocol(header_timeout=0.3)) as url:
        with connect(url) as slow:
            slow.sendall(b"GET /agents HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
            assert closed_by_server(slow)
        with connect(url) as fine:  # a whole head in time is answered, and the next one too
            head = b"GET /agents HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            fine.sendall(head)
            assert fine.recv(4096).startswith(b"HTTP/1.1 200")


def test_the_head_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="above 0"):
        bounded_protocol(header_timeout=0)


@pytest.mark.anyio
async def test_a_body_that_does_not_arrive_in_time_is_a_408() -> None:
    reached: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["path"])

    guard = GuardMiddleware(app, RequestGuard(), body_timeout=0.2)
    never = anyio.Event()
    sent: list[Message] = []

    async def receive() -> Message:
        await never.wait()  # a client that stopped sending halfway
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/agents/echo/run",
        "headers": [(b"host", b"localhost"), (b"content-type", b"application/json")],
    }
    with anyio.fail_after(5):
        await guard(scope, receive, send)
    assert reached == []
    assert sent[0]["status"] == 408


@pytest.mark.anyio
async def test_every_answer_forbids_framing_and_foreign_scripts() -> None:
    transport = httpx2.ASGITransport(echo_app())
    async with httpx2.AsyncClient(transport=transport, base_url="http://localhost") as http:
        for response in (await http.get("/"), await http.get("/agents"), await http.get("/nope")):
            assert response.headers["x-frame-options"] == "DENY"
            policy = response.headers["content-security-policy"]
            assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy


def test_the_token_comes_from_a_file_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = tmp_path / "token"
    kept.write_text("s3cret\nignored\n")
    monkeypatch.delenv("RAF_TOKEN", raising=False)
    monkeypatch.setenv("RAF_SERVE_TOKEN", "from-env")
    assert _serve_token(None, str(kept)) == "s3cret"
    assert _serve_token(None, None) == "from-env"
    assert _serve_token("given", None) == "given"
    with pytest.raises(SystemExit, match="not both"):
        _serve_token("given", str(kept))
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(SystemExit, match="holds no token"):
        _serve_token(None, str(tmp_path / "empty"))
    with pytest.raises(SystemExit, match="cannot be read"):
        _serve_token(None, str(tmp_path / "missing"))
