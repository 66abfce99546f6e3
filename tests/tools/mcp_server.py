"""A small MCP server for the tests: `python tests/tools/mcp_server.py` serves it over stdio;
`python tests/tools/mcp_server.py forks` serves fresh copies of it over Streamable HTTP, each in
a process forked on request (see `serve_forks`)."""

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


def serve_forks() -> None:
    """Answer the lines on stdin: `start` forks a process serving a fresh `build()` over
    Streamable HTTP on a free port of 127.0.0.1 and answers `PID PORT`; `kill PID` kills and
    reaps it and answers `killed`. EOF kills what is left.

    Starting the SDK costs ~2 CPU-s (its imports); a fork of this process, which has made them,
    costs a few milliseconds. The port listens before the fork, so a client may connect at
    once."""
    import signal
    import socket

    import uvicorn

    children: set[int] = set()
    for line in sys.stdin:
        command, *args = line.split()
        if command == "start":
            listener = socket.create_server(("127.0.0.1", 0))
            pid = os.fork()
            if pid == 0:  # the child: serve until killed, or until a tool exits it
                devnull = os.open(os.devnull, os.O_RDWR)
                os.dup2(devnull, 0)
                os.dup2(devnull, 1)  # uvicorn's access log must not reach the answers
                try:
                    app = build().streamable_http_app()
                    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run([listener])
                finally:
                    os._exit(0)
            port = listener.getsockname()[1]
            listener.close()
            children.add(pid)
            print(pid, port, flush=True)
        elif command == "kill":
            pid = int(args[0])
            if pid in children:
                children.discard(pid)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            print("killed", flush=True)
        else:
            raise SystemExit(f"unknown command {line!r}")
    for pid in children:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["forks"]:
        serve_forks()
    else:
        build().run("stdio")
