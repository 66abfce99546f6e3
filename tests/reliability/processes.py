"""What the reliability tests need of the child processes they drive."""

from __future__ import annotations

from anyio.abc import Process


async def read_line(process: Process) -> str:
    """The next line the child prints (without its line end)."""
    assert process.stdout is not None
    line = b""
    async for chunk in process.stdout:
        line += chunk
        if b"\n" in line:
            break
    return line.decode().strip()
