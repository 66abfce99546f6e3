"""The app under a real uvicorn on 127.0.0.1 (a free port), in a thread of the test process."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette

JS = Path(__file__).parent / "js"


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


@contextmanager
def running(
    app: Starlette | Callable[[], Starlette], http: type[asyncio.Protocol] | None = None
) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 until the block ends; the value is its base URL.

    Pass a factory when the app holds what belongs to one event loop (a store's locks, made
    for the loop they are made on): uvicorn calls it on the server's own loop. `http` is
    uvicorn's HTTP protocol class (its own by default).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        factory=not isinstance(app, Starlette),
        http=http or "auto",
    )
    server = _Server(config)
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=[sock])), name="uvicorn", daemon=True
    )
    thread.start()
    try:
        assert server.ready.wait(10), "uvicorn did not start within 10 s"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def require(tool: str, install: str) -> None:
    """Skip (fail under CI) when `tool` is missing, saying how to install it."""
    message = f"{tool} is not installed; {install}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def node_client() -> Path:
    """The conformance script, once Node and its npm packages are there."""
    if shutil.which("node") is None:
        require("node", "apt-get install -y nodejs npm, then npm ci --prefix tests/serve/js")
    if not (JS / "node_modules" / "@ag-ui" / "client").is_dir():
        require("@ag-ui/client", "run npm ci --prefix tests/serve/js")
    return JS / "conformance.mjs"


def node_summary(script: str, *args: str) -> Any:
    """The JSON summary the Node script `script` (in `JS`) prints when run with `args`,
    once it exits without error (skipped without Node and the client, as `node_client`)."""
    node_client()
    done = subprocess.run(
        ["node", str(JS / script), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
