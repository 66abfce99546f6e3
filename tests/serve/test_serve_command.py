"""`raf serve MODULE:ATTR` in a subprocess: it binds, serves the tree and the page, wants the token."""

from __future__ import annotations

import re
import signal
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

pytestmark = pytest.mark.anyio

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


async def test_raf_serve_explains_a_bad_target(tmp_path: Path) -> None:
    done = await anyio.run_process(
        [str(RAF), "serve", "no_such_module:agent"], cwd=tmp_path, check=False
    )
    assert done.returncode != 0
    assert b"no_such_module" in done.stderr
