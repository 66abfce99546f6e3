"""The test MCP server's processes, forked from one warm process (mcp_server.py's
`serve_forks`): a start of the MCP SDK costs ~2 CPU-s, a fork a few milliseconds."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

HERE = Path(__file__).parent


class Forks:
    """The `forks` process: test servers over stdio (`stdio`, the command to give `mcp_tools`)
    and over Streamable HTTP (`serving`), each a fresh process forked from it."""

    def __init__(self, socket_path: Path) -> None:
        self._process = subprocess.Popen(
            [sys.executable, str(HERE / "mcp_server.py"), "forks", str(socket_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.stdio = [sys.executable, "-S", str(HERE / "mcp_forked.py"), str(socket_path)]
        assert self._process.stdout is not None
        if self._process.stdout.readline() != "ready\n":  # then `stdio` connects
            self.close()
            raise RuntimeError("the forks process did not start; see its stderr")

    def _ask(self, line: str) -> str:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(line + "\n")
        self._process.stdin.flush()
        answer = self._process.stdout.readline()
        assert answer, f"the forks process ended with {self._process.poll()}"
        return answer

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[tuple[str, Forked]]:
        """A test server over HTTP, yielded with its URL (it listens already); killed on
        leaving."""
        pid, port = (await anyio.to_thread.run_sync(self._ask, "start")).split()
        server = Forked(self, int(pid))
        try:
            yield f"http://127.0.0.1:{port}/mcp", server
        finally:
            with anyio.CancelScope(shield=True):
                await server.kill()

    async def kill(self, pid: int) -> None:
        await anyio.to_thread.run_sync(self._ask, f"kill {pid}")

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()  # the forks process kills what is left, and ends
        try:
            self._process.wait(30)
        finally:
            self._process.kill()
            self._process.wait()
            assert self._process.stdout is not None
            self._process.stdout.close()


class Forked:
    """A test server over HTTP of `Forks.serving`."""

    def __init__(self, forks: Forks, pid: int) -> None:
        self._forks = forks
        self._pid = pid

    async def kill(self) -> None:
        """Kill the server; back once it is gone (a second kill does nothing)."""
        await self._forks.kill(self._pid)
