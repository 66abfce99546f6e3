"""A small pool of synchronous psycopg connections, used from anyio worker threads.

The synchronous driver works the same under asyncio and trio; each operation takes a
connection, runs in a worker thread, and hands the connection back. At most `max_size`
operations (and connections) run at once. A cancelled operation sends PostgreSQL a cancel
request for its statement, waits for the thread, and rolls back.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus

from raf.stores._interruptible import Interrupted, close_in_thread, run_interruptible

T = TypeVar("T")

Connection = psycopg.Connection[Any]

# Used unless the DSN (or PGCONNECT_TIMEOUT) says otherwise: an unreachable server fails the
# operation instead of hanging it, since a connection attempt cannot be interrupted.
CONNECT_TIMEOUT_SECONDS = 10
_CANCEL_TIMEOUT_SECONDS = 10.0


class ConnectionPool:
    """Up to `max_size` autocommit connections to `dsn`, opened on demand and reused."""

    def __init__(self, dsn: str, *, max_size: int) -> None:
        if max_size < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_size}")
        self._dsn = dsn
        self._options = connect_options(dsn)
        self._limiter = anyio.CapacityLimiter(max_size)
        self._idle: list[Connection] = []
        self._closed = False

    async def run(self, operation: Callable[[Connection], T]) -> T:
        """Run `operation` with a connection in a worker thread and return its result."""
        async with self._limiter:
            if self._closed:
                raise anyio.ClosedResourceError("the PostgreSQL store is closed")
            lease = _Lease(self._dsn, self._options, self._idle.pop() if self._idle else None)
            try:
                return await run_interruptible(
                    partial(lease.run, operation),
                    lease.interrupt,
                    abandon=lease.abandon,
                    orphaned=lease.close,
                )
            finally:
                if lease.connection is not None and not lease.abandoned:
                    if self._closed:
                        await close_in_thread(lease.connection.close)
                    else:
                        self._idle.append(lease.connection)

    async def aclose(self) -> None:
        """Close idle connections now and busy ones when their operation ends."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await close_in_thread(connection.close)


class _Lease:
    """One operation's hold on a connection; `run` runs in the worker thread.

    `interrupt` (from another thread) cancels the statement in progress. A cancel request that
    arrives after its statement ended would hit the connection's next one instead, so the
    connection is closed rather than reused unless the statement did end in `QueryCanceled`.
    """

    def __init__(self, dsn: str, options: dict[str, Any], connection: Connection | None) -> None:
        self.dsn = dsn
        self.options = options
        self.connection = connection
        self._guard = threading.Lock()  # orders `interrupt` against the start and end of a run
        self._busy: Connection | None = None  # running a statement on it now
        self._interrupted = False
        self.abandoned = False
        """The caller stopped waiting for `run`: its thread closes the connection when done."""

    def run(self, operation: Callable[[Connection], T]) -> T:
        reused = self.connection
        if reused is not None:
            try:
                return self._attempt(reused, operation)
            except psycopg.OperationalError:
                if not reused.closed:
                    raise
                # The server dropped this idle connection: try once more on a fresh one.
        self.connection = psycopg.connect(self.dsn, autocommit=True, **self.options)
        return self._attempt(self.connection, operation)

    def abandon(self) -> None:
        self.abandoned = True

    def close(self) -> None:
        """Close the connection (in the thread of an abandoned `run`, once it ends)."""
        connection, self.connection = self.connection, None
        if connection is not None:
            connection.close()

    def interrupt(self) -> None:
        with self._guard:
            self._interrupted = True
            if self._busy is not None:
                # On failure the statement runs on, and the caller waits for it as before.
                with contextlib.suppress(psycopg.Error):
                    self._busy.cancel_safe(timeout=_CANCEL_TIMEOUT_SECONDS)

    def _attempt(self, connection: Connection, operation: Callable[[Connection], T]) -> T:
        with self._guard:
            if self._interrupted:
                raise Interrupted("the PostgreSQL operation was cancelled before it started")
            self._busy = connection
        cancelled = False
        try:
            return operation(connection)
        except psycopg.errors.QueryCanceled:
            cancelled = True
            raise
        finally:
            with self._guard:
                self._busy = None
                stray_cancel = self._interrupted and not cancelled
            if connection.broken or connection.closed or stray_cancel:
                connection.close()
                self.connection = None
            elif connection.info.transaction_status != TransactionStatus.IDLE:
                connection.rollback()


def connect_options(dsn: str) -> dict[str, Any]:
    """Keyword arguments for `psycopg.connect`: the default connect timeout, unless set."""
    if "connect_timeout" in conninfo_to_dict(dsn) or "PGCONNECT_TIMEOUT" in os.environ:
        return {}
    return {"connect_timeout": CONNECT_TIMEOUT_SECONDS}
