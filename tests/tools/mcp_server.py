"""A small MCP server for the tests: `python tests/tools/mcp_server.py` serves it over stdio,
`python tests/tools/mcp_server.py http` over Streamable HTTP (see `serve_http`). The tests
fork it from a process that imported the MCP SDK already (`mcp_server` in
tests/tools/conftest.py)."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def build() -> MCPServer:
    """The test server: adds, fails on purpose, exits mid-call, or grows a tool."""
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

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add the tool `double` and tell the client the tool list changed."""

        def double(x: int) -> int:
            """Double a number."""
            return 2 * x

        server.add_tool(double)
        await ctx.notify_tools_changed()
        return "grown"

    @server.resource("note://big", mime_type="text/plain")
    def big() -> str:
        """A note of a million characters."""
        return "x" * 1_000_000

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone by name."""
        return f"Say hello to {name}."

    return server


def serve_http() -> None:
    """Serve over Streamable HTTP on a free port of 127.0.0.1: print the port once it listens,
    then serve until killed."""
    import socket

    import uvicorn

    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # nothing more on a pipe nobody reads any more
    app = build().streamable_http_app()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run([listener])


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        build().run("stdio")
