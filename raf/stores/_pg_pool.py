"""A small pool of synchronous psycopg connections, used from anyio worker threads.

The synchronous driver works the same under asyncio and trio; each operation takes a
connection, runs in a worker thread, and hands the connection back. At most `max_size`
operations (and connections) run at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import psycopg
from anyio import to_thread
from psycopg.pq import TransactionStatus

T = TypeVar("T")

Connection = psycopg.Connection[Any]


class ConnectionPool:
    """Up to `max_size` autocommit connections to `dsn`, opened on demand and reused."""

    def __init__(self, dsn: str, *, max_size: int) -> None:
        if max_size < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_size}")
        self._dsn = dsn
        self._limiter = anyio.CapacityLimiter(max_size)
        self._idle: list[Connection] = []
        self._closed = False

    async def run(self, operation: Callable[[Connection], T]) -> T:
        """Run `operation` with a connection in a worker thread and return its result."""
        async with self._limiter:
            if self._closed:
                raise anyio.ClosedResourceError("the PostgreSQL store is closed")
            lease = _Lease(self._dsn, self._idle.pop() if self._idle else None)
            try:
                # Not abandoned on cancellation: the statement finishes, the connection returns.
                return await to_thread.run_sync(lease.run, operation)
            finally:
                if lease.connection is not None:
                    if self._closed:
                        with anyio.CancelScope(shield=True):
                            await to_thread.run_sync(lease.connection.close)
                    else:
                        self._idle.append(lease.connection)

    async def aclose(self) -> None:
        """Close idle connections now and busy ones when their operation ends."""
        self._closed = True
        idle, self._idle = self._idle, []
        with anyio.CancelScope(shield=True):
            for connection in idle:
                await to_thread.run_sync(connection.close)


class _Lease:
    """One operation's hold on a connection; runs in the worker thread."""

    def __init__(self, dsn: str, connection: Connection | None) -> None:
        self.dsn = dsn
        self.connection = connection

    def run(self, operation: Callable[[Connection], T]) -> T:
        reused = self.connection
        if reused is not None:
            try:
                return self._attempt(reused, operation)
            except psycopg.OperationalError:
                if not reused.closed:
                    raise
                # The server dropped this idle connection: try once more on a fresh one.
        self.connection = psycopg.connect(self.dsn, autocommit=True)
        return self._attempt(self.connection, operation)

    def _attempt(self, connection: Connection, operation: Callable[[Connection], T]) -> T:
        try:
            return operation(connection)
        finally:
            if connection.broken or connection.closed:
                connection.close()
                self.connection = None
            elif connection.info.transaction_status != TransactionStatus.IDLE:
                connection.rollback()
