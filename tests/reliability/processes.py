"""What the reliability tests need of the child processes they drive, and what those
children share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anyio.abc import Process

from raf.stores import PostgresCheckpointStore, SqliteCheckpointStore


def open_store(spec: str, wrap: Callable[[type[Any]], type[Any]] = lambda kind: kind) -> Any:
    """The store `spec` names (`sqlite:PATH` or `postgres:DSN#SCHEMA`), its class passed
    through `wrap` first."""
    kind, _, where = spec.partition(":")
    if kind == "sqlite":
        return wrap(SqliteCheckpointStore)(where)
    dsn, _, schema = where.partition("#")
    return wrap(PostgresCheckpointStore)(dsn, schema=schema)


async def read_line(process: Process) -> str:
    """The next line the child prints (without its line end)."""
    assert process.stdout is not None
    line = b""
    async for chunk in process.stdout:
        line += chunk
        if b"\n" in line:
            break
    return line.decode().strip()
