"""The test MCP server (`mcp_server.py`) over Streamable HTTP, as a process of its own forked
from the `mcp_server` command (tests/tools/conftest.py)."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio
from anyio.abc import Process

from tests.forkserver import kill
from tests.reliability.processes import read_line


@asynccontextmanager
async def serving_over_http(mcp_server: list[str]) -> AsyncIterator[tuple[str, Process]]:
    """The test server over Streamable HTTP, yielded with its URL (it listens already) and its
    process; killed on leaving (`stopped`)."""
    process = await anyio.open_process([*mcp_server, "http"], stdout=subprocess.PIPE)
    try:
        with anyio.fail_after(20):
            port = int(await read_line(process))
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        await stopped(process)


async def stopped(process: Process) -> None:
    """SIGKILL the forked server of `process` (`tests.forkserver.kill`); back once it is gone.
    Bounded: a requester that cannot pass the signal on is killed itself, which takes its
    worker with it."""
    with anyio.CancelScope(shield=True):
        with suppress(ProcessLookupError):  # stopped already
            kill(process)
        with anyio.move_on_after(20):
            await process.wait()
            return
        process.kill()
        await process.wait()
