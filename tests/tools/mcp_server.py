"""A small MCP server for the tests: `python tests/tools/mcp_server.py` serves it over stdio;
`python tests/tools/mcp_server.py forks SOCKET` serves fresh copies of it, over Streamable HTTP
or stdio, each in a process forked on request (see `serve_forks`)."""

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


def serve_forks(socket_path: str) -> None:
    """Serve fresh copies of the test server, each in a process forked from this one.

    Lines on stdin: `start` forks a server over Streamable HTTP on a free port of 127.0.0.1
    and answers `PID PORT`; `kill PID` kills and reaps it and answers `killed`. A connection
    to the Unix socket `socket_path` that sends its stdin and stdout (mcp_forked.py) gets a
    server over stdio on them, and its exit code once it ends; closing the connection kills
    it. Says `ready` once it listens; EOF on stdin kills what is left.

    Starting the SDK costs ~2 CPU-s (its imports); a fork of this process, which has made them,
    costs a few milliseconds. The port listens before the fork, so a client may connect at
    once."""
    import selectors
    import signal
    import socket
    import traceback
    from collections.abc import Callable

    import uvicorn

    selector = selectors.DefaultSelector()
    launches = socket.socket(socket.AF_UNIX)
    launches.bind(socket_path)
    launches.listen()
    selector.register(sys.stdin, selectors.EVENT_READ)
    selector.register(launches, selectors.EVENT_READ)
    print("ready", flush=True)
    over_http: set[int] = set()
    over_stdio: dict[int, tuple[socket.socket, int]] = {}  # pid: (connection, pidfd)

    def fork(serve: Callable[[], None]) -> int:
        pid = os.fork()
        if pid == 0:  # the child: serve until killed, or until a tool exits it
            try:
                selector.close()
                launches.close()
                for connection, pidfd in over_stdio.values():
                    connection.close()
                    os.close(pidfd)
                serve()
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            finally:
                os._exit(0)
        return pid

    def serve_http(listener: socket.socket) -> None:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)  # uvicorn's access log must not reach the answers
        app = build().streamable_http_app()
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run([listener])

    def serve_stdio(connection: socket.socket, stdin: int, stdout: int) -> None:
        connection.close()
        os.dup2(stdin, 0)
        os.dup2(stdout, 1)
        os.close(stdin)
        os.close(stdout)
        build().run("stdio")

    def command(line: str) -> None:
        name, *args = line.split()
        if name == "start":
            listener = socket.create_server(("127.0.0.1", 0))
            pid = fork(lambda: serve_http(listener))
            port = listener.getsockname()[1]
            listener.close()
            over_http.add(pid)
            print(pid, port, flush=True)
        elif name == "kill":
            pid = int(args[0])
            if pid in over_http:
                over_http.discard(pid)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            print("killed", flush=True)
        else:
            raise SystemExit(f"unknown command {line!r}")

    def launch() -> None:
        connection, _ = launches.accept()
        _, fds, _, _ = socket.recv_fds(connection, 16, 2)
        stdin, stdout = fds
        pid = fork(lambda: serve_stdio(connection, stdin, stdout))
        os.close(stdin)
        os.close(stdout)
        pidfd = os.pidfd_open(pid)
        over_stdio[pid] = (connection, pidfd)
        selector.register(connection, selectors.EVENT_READ, pid)
        selector.register(pidfd, selectors.EVENT_READ, pid)

    def ended(pid: int, fileobj: object) -> None:
        connection, pidfd = over_stdio[pid]
        if fileobj is connection:  # its launcher is gone: so is the server
            selector.unregister(connection)
            os.kill(pid, signal.SIGKILL)
            return
        _, status = os.waitpid(pid, 0)
        selector.unregister(pidfd)
        os.close(pidfd)
        del over_stdio[pid]
        with connection:
            if selector.get_map().get(connection) is not None:
                selector.unregister(connection)
                connection.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))

    while True:
        for key, _ in selector.select():
            if key.fileobj is sys.stdin:
                line = sys.stdin.readline()
                if not line:
                    for pid in [*over_http, *over_stdio]:
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                    return
                command(line)
            elif key.fileobj is launches:
                launch()
            else:
                ended(key.data, key.fileobj)


if __name__ == "__main__":
    if sys.argv[1:2] == ["forks"]:
        serve_forks(sys.argv[2])
    else:
        build().run("stdio")
