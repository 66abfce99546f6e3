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
import threading
from collections.abc import Callable
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

    __slots__ = (
        "_closed",
        "_connection",
        "_dsn",
        "_guard",
        "_held",
        "_limiter",
        "_namespace",
        "_options",
        "_turn",
    )

    def __init__(self, dsn: str, namespace: str) -> None:
        self._dsn = dsn
        self._options = connect_options(dsn)
        self._namespace = namespace
        self._connection: Connection | None = None
        self._held: set[str] = set()
        self._turn = anyio.Lock()  # one statement at a time on the connection
        # Its own worker thread: a lock statement never waits for threads busy elsewhere.
        self._limiter = anyio.CapacityLimiter(1)
        self._guard = threading.Lock()  # one thread at a time on the connection (see `_run`)
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
                await to_thread.run_sync(self._close, limiter=self._limiter)

    def _close(self) -> None:
        """Close the connection (in a worker thread, once a statement left running ends)."""
        with self._guard:
            self._closed = True
            self._held.clear()
            connection, self._connection = self._connection, None
            if connection is not None:
                connection.close()

    async def _try(self, key: str) -> bool:
        # Not shielded: a caller cancelled before the statement ran is gone at once, and one
        # cancelled while it runs leaves the thread to record the lock or let it go (`_Attempt`).
        attempt = _Attempt()

        def take() -> bool:
            if not attempt.start():
                return False  # the caller gave up before the statement: nothing taken
            held = self._run(_TRY_LOCK, key)
            if held and not attempt.keep(lambda: self._held.add(key)):
                self._run(_UNLOCK, key)  # the caller is gone: nobody would ever release it
                return False
            return held

        async with self._turn:
            try:
                return await to_thread.run_sync(take, limiter=self._limiter, abandon_on_cancel=True)
            except anyio.get_cancelled_exc_class():
                if attempt.give_up():  # recorded just before the cancellation: let it go
                    self._held.discard(key)
                    with anyio.CancelScope(shield=True), contextlib.suppress(psycopg.Error):
                        await to_thread.run_sync(self._run, _UNLOCK, key, limiter=self._limiter)
                raise

    async def _unlock(self, key: str) -> None:
        async with self._turn:
            if key in self._held and self._connection is not None:
                self._held.discard(key)
                # Should the connection be gone, the lock went with it.
                with contextlib.suppress(psycopg.Error):
                    await to_thread.run_sync(self._run, _UNLOCK, key, limiter=self._limiter)

    def _run(self, statement: LiteralString, key: str) -> bool:
        """Run `statement` on the lock connection (in a worker thread): its boolean result.

        Under `_guard`: a statement a cancelled caller left to its thread never runs beside
        another one, nor connects a second connection, nor outlives the store's closing.
        """
        with self._guard:
            return self._run_guarded(statement, key)

    def _run_guarded(self, statement: LiteralString, key: str) -> bool:
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


class _Attempt:
    """One lock attempt, as its caller and its worker thread see it (under `guard`)."""

    __slots__ = ("gave_up", "guard", "kept", "started")

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.started = False
        self.kept = False
        self.gave_up = False

    def start(self) -> bool:
        """In the thread: whether to run the statement (not once the caller gave up)."""
        with self.guard:
            self.started = not self.gave_up
            return self.started

    def keep(self, record: Callable[[], object]) -> bool:
        """In the thread, the lock taken: `record()` it unless the caller gave up meanwhile."""
        with self.guard:
            if self.gave_up:
                return False
            record()
            self.kept = True
            return True

    def give_up(self) -> bool:
        """For a cancelled caller: whether the thread had already recorded the lock."""
        with self.guard:
            self.gave_up = True
            return self.kept
