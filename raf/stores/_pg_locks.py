"""`AdvisoryLocks`: a session held among every process of one database, by an advisory lock.

A held session is a session-level advisory lock (`pg_try_advisory_lock`) on one connection
the store keeps for its locks, however many sessions it holds: PostgreSQL frees them all when
that connection ends, so a worker that dies lets its sessions go without anyone cleaning up.
The lock's key is the 64-bit `hashtextextended` of the store's schema and the session id. The
store's own runs never meet on the server (its `SessionLocks` table orders them first), so one
connection holding every lock is enough. A run that waits asks again after a pause that grows
from 5 ms to 100 ms. Should the connection drop, the next lock operation opens another and
takes the held sessions again, logging any another worker took in between.
"""

from __future__ import annotations

import contextlib
import logging
from functools import partial
from typing import LiteralString

import anyio
import psycopg
from anyio import to_thread

from raf.stores._pg_pool import Connection, connect_options
from raf.stores._session_locks import Release, taken

__all__ = ["AdvisoryLocks"]

logger = logging.getLogger("raf")

_TRY_LOCK: LiteralString = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK: LiteralString = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"


class AdvisoryLocks:
    """Session locks of one store (`namespace`: its schema), on one connection to `dsn`."""

    __slots__ = ("_closed", "_connection", "_dsn", "_held", "_namespace", "_options", "_turn")

    def __init__(self, dsn: str, namespace: str) -> None:
        self._dsn = dsn
        self._options = connect_options(dsn)
        self._namespace = namespace
        self._connection: Connection | None = None
        self._held: set[str] = set()
        self._turn = anyio.Lock()  # one statement at a time on the connection
        self._closed = False

    async def acquire(self, session_id: str, wait: bool) -> Release | None:
        """Lock `session_id` (waiting for it when `wait`): how to unlock it, or None when
        another process holds it."""
        key = f"raf.session:{self._namespace}:{session_id}"
        if not await taken(partial(self._try, key), wait=wait):
            return None

        async def release() -> None:
            with anyio.CancelScope(shield=True):
                await self._unlock(key)

        return release

    async def aclose(self) -> None:
        """Close the connection, which lets go of every lock still held."""
        with anyio.CancelScope(shield=True):
            async with self._turn:
                self._closed = True
                self._held.clear()
                connection, self._connection = self._connection, None
                if connection is not None:
                    await to_thread.run_sync(connection.close)

    async def _try(self, key: str) -> bool:
        held = False
        # Shielded: a statement cut off by a cancellation could take the lock unrecorded.
        with anyio.CancelScope(shield=True):
            async with self._turn:
                held = await to_thread.run_sync(self._run, _TRY_LOCK, key)
                if held:
                    self._held.add(key)
        return held

    async def _unlock(self, key: str) -> None:
        async with self._turn:
            if key in self._held and self._connection is not None:
                self._held.discard(key)
                # Should the connection be gone, the lock went with it.
                with contextlib.suppress(psycopg.Error):
                    await to_thread.run_sync(self._run, _UNLOCK, key)

    def _run(self, statement: LiteralString, key: str) -> bool:
        """Run `statement` on the lock connection (in a worker thread): its boolean result."""
        if self._closed:
            raise anyio.ClosedResourceError("the PostgreSQL store is closed")
        connection = self._connection
        if connection is None or connection.closed or connection.broken:
            connection = self._reconnect()
        try:
            row = connection.execute(statement, (key,)).fetchone()
        except psycopg.OperationalError:
            if not (connection.closed or connection.broken):
                raise
            connection = self._reconnect()
            row = connection.execute(statement, (key,)).fetchone()
        return row is not None and bool(row[0])

    def _reconnect(self) -> Connection:
        """A new lock connection, holding again the sessions the old one held."""
        old, self._connection = self._connection, None
        if old is not None:
            old.close()
        connection = psycopg.connect(self._dsn, autocommit=True, **self._options)
        self._connection = connection
        for key in sorted(self._held):
            row = connection.execute(_TRY_LOCK, (key,)).fetchone()
            if row is None or not row[0]:
                self._held.discard(key)
                logger.warning(
                    "the PostgreSQL connection holding session locks dropped, and another "
                    "worker took %r meanwhile: two runs of it may overlap",
                    key,
                )
        return connection
