"""`AdvisoryLocks`: a session held among every process of one database, by an advisory lock.

A held session is a session-level advisory lock (`pg_advisory_lock`) on a connection of its
own, kept for the run: PostgreSQL frees it when the connection ends, so a worker that dies
(or loses its connection) lets the session go without anyone cleaning up. The lock's key is
the 64-bit `hashtextextended` of the store's schema and the session id. A run that waits
blocks in `pg_advisory_lock`, which the server grants in the order the runs asked; cancelling
the wait cancels the statement on the server.
"""

from __future__ import annotations

from functools import partial

import anyio
import psycopg
from anyio import to_thread

from raf.stores._interruptible import run_interruptible
from raf.stores._pg_pool import Connection, Lease, connect_options
from raf.stores._session_locks import Release

__all__ = ["AdvisoryLocks"]

_TRY_LOCK = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_LOCK = "SELECT pg_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"


class AdvisoryLocks:
    """Session locks of one store (`namespace`: its schema) on dedicated connections to `dsn`."""

    __slots__ = ("_closed", "_dsn", "_held", "_idle", "_namespace", "_options")

    def __init__(self, dsn: str, namespace: str) -> None:
        self._dsn = dsn
        self._options = connect_options(dsn)
        self._namespace = namespace
        self._idle: list[Connection] = []
        self._held: set[Connection] = set()
        self._closed = False

    async def acquire(self, session_id: str, wait: bool) -> Release | None:
        """Lock `session_id` (waiting for it when `wait`): how to unlock it, or None when
        another connection holds it."""
        if self._closed:
            raise anyio.ClosedResourceError("the PostgreSQL store is closed")
        key = f"raf.session:{self._namespace}:{session_id}"
        lease = Lease(self._dsn, self._options, self._idle.pop() if self._idle else None)
        statement = _LOCK if wait else _TRY_LOCK

        def lock(connection: Connection) -> bool:
            row = connection.execute(statement, (key,)).fetchone()
            return wait or (row is not None and bool(row[0]))

        try:
            held = await run_interruptible(partial(lease.run, lock), lease.interrupt)
        except BaseException:
            # Whether or not the lock was granted, closing its connection leaves none behind.
            await self._close(lease.connection)
            raise
        connection = lease.connection
        assert connection is not None
        if not held:
            self._idle.append(connection)
            return None
        self._held.add(connection)

        async def release() -> None:
            await self._unlock(connection, key)

        return release

    async def _unlock(self, connection: Connection, key: str) -> None:
        def unlock() -> bool:
            try:
                connection.execute(_UNLOCK, (key,))
            except psycopg.Error:
                return False
            return not (connection.broken or connection.closed)

        if connection not in self._held:
            return  # the store closed it, and PostgreSQL let the lock go with it
        self._held.discard(connection)
        with anyio.CancelScope(shield=True):
            if await to_thread.run_sync(unlock) and not self._closed:
                self._idle.append(connection)
            else:
                await self._close(connection)

    async def aclose(self) -> None:
        """Close every connection, which lets go of every lock still held."""
        self._closed = True
        connections = [*self._idle, *self._held]
        self._idle, self._held = [], set()
        for connection in connections:
            await self._close(connection)

    @staticmethod
    async def _close(connection: Connection | None) -> None:
        if connection is not None:
            with anyio.CancelScope(shield=True):
                await to_thread.run_sync(connection.close)
