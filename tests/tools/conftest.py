"""Fixtures of the tools tests: the test MCP server (`mcp_server.py`), forked from a process
that imported the MCP SDK already (`tests.forkserver`: a start of the SDK costs ~2 CPU-s, a
fork a few milliseconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.forkserver import ForkServers, script

HERE = Path(__file__).parent
PRELOAD = [
    "mcp.server.mcpserver",
    "mcp.server.stdio",
    "mcp.server.streamable_http_manager",
    "anyio._backends._asyncio",
    "uvicorn",
    "uvicorn.protocols.http.h11_impl",
]
"""What the test server imports, and what serving it imports next, made once in the server
its processes are forked from."""


@pytest.fixture(scope="module")
def mcp_server(forkservers: ForkServers) -> list[str]:
    """The command of the test server over stdio (what `mcp_tools` takes), forked."""
    return script(forkservers.get(*PRELOAD), HERE / "mcp_server.py")
