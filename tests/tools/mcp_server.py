"""A small MCP server for the tests: `python tests/tools/mcp_server.py` serves it over stdio."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def build() -> MCPServer:
    """The test server: adds, fails on purpose, or exits mid-call."""
    server = MCPServer("raf-test")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def fail(reason: str) -> str:
        """Fail with `reason`."""
        raise ToolError(reason)

    @server.tool(name="die.now")
    def die() -> str:
        """Exit the server process at once."""
        os._exit(3)

    return server


if __name__ == "__main__":
    build().run("stdio")
