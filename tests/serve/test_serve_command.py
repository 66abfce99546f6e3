"""`raf serve MODULE:ATTR` in a subprocess: it binds, serves the tree and the page, wants the token.

The subject of each test is the `raf serve` process it starts, which runs on its own event
loop: the tests drive it once, on asyncio (the server on both backends is tested in-process in
the other modules of this package)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


TREES = Path(__file__).parent / "trees.py"
RAF = Path(sys.executable).parent / "raf"


async def wait_for_port(process: Process) -> int:
    """Read uvicorn's log until it says where it listens."""
    assert process.stderr is not None
    log = ""
    async for chunk in TextReceiveStream(process.stderr):
        log += chunk
        found = re.search(r"running on http://127\.0\.0\.1:(\d+)", log)
        if found:
            return int(found.group(1))
    raise AssertionError(f"raf serve ended without serving:\n{log}")


async def test_raf_serve_serves_the_tree_with_a_token(tmp_path: Path) -> None:
    command = [str(RAF), "serve", f"{TREES}:newsroom", "--port", "0", "--token", "tok"]
    with anyio.fail_after(30):
        async with await anyio.open_process(command, cwd=tmp_path) as process:
            try:
                port = await wait_for_port(process)
                async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                    refused = await http.get("/agents")
                    trees = await http.get("/agents", headers={"Authorization": "Bearer tok"})
                    page = await http.get("/")
            finally:
                process.send_signal(signal.SIGINT)
            assert await process.wait() == 130  # stopped by Ctrl-C, after a clean shutdown
    assert refused.status_code == 401
    assert [t["id"] for t in trees.json()] == ["newsroom"]
    assert "<title>" in page.text


def test_raf_serve_explains_a_bad_target(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(RAF), "serve", "no_such_module:agent"], cwd=tmp_path, capture_output=True, timeout=30
    )
    assert done.returncode != 0
    assert b"no_such_module" in done.stderr


@pytest.mark.parametrize("route", ["/agents/staller/run", "/studio/agents/staller/runs"])
async def test_a_stopping_server_ends_each_run_in_flight_with_run_error(
    tmp_path: Path, route: str
) -> None:
    command = [str(RAF), "serve", f"{TREES}:stalling", "--port", "0"]
    body = {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "u", "role": "user", "content": "x"}],
    }
    events: list[dict[str, object]] = []
    with anyio.fail_after(30):
        async with await anyio.open_process(command, cwd=tmp_path) as process:
            port = await wait_for_port(process)
            async with (
                httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=20) as http,
                http.stream("POST", route, json=body) as response,
            ):
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    events.append(json.loads(line[5:]))
                    if events[-1]["type"] == "TEXT_MESSAGE_CONTENT":  # the run is in flight
                        process.send_signal(signal.SIGINT)
            assert await process.wait() == 130
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"]
    assert events[-1]["code"] == "ServerStopping"
    assert "send it again" in str(events[-1]["message"])


def test_a_port_out_of_range_is_one_line(tmp_path: Path) -> None:
    command = [str(RAF), "serve", f"{TREES}:newsroom", "--port", "99999"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        "raf serve: port 99999 is not a TCP port: pass 0..65535 (0 picks a free one)"
    ]


async def test_every_address_without_a_token_warns_and_shows_a_url_that_answers(
    tmp_path: Path,
) -> None:
    with socket.socket() as probe:  # a free port, to bind every address on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [str(RAF), "serve", f"{TREES}:newsroom", "--host", "0.0.0.0", "--port", str(port)]
    env = {k: v for k, v in os.environ.items() if k != "RAF_TOKEN"} | {"COLUMNS": "200"}
    with anyio.fail_after(30):
        async with await anyio.open_process(command, cwd=tmp_path, env=env) as process:
            assert process.stdout is not None and process.stderr is not None
            try:
                said = ""
                async for chunk in TextReceiveStream(process.stdout):
                    said += chunk
                    if "Ctrl-C" in said:
                        break
                url = re.search(r"web page at (http://\S+/);", said)
                assert url is not None, said
                log = ""
                async for chunk in TextReceiveStream(process.stderr):
                    log += chunk
                    if "running on" in log:
                        break
                async with httpx2.AsyncClient() as http:
                    trees = await http.get(url.group(1) + "agents")
            finally:
                process.send_signal(signal.SIGINT)
            await process.wait()
    assert url.group(1) == f"http://127.0.0.1:{port}/"
    assert trees.status_code == 200
    assert "warning: serving every address without a token" in log


def test_a_body_limit_that_is_no_size_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(RAF), "serve", f"{TREES}:newsroom", "--max-body-bytes", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "raf serve: --max-body-bytes 0 is not a size: pass a positive number"
    ]
