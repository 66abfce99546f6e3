"""`AdvisoryLocks`: a session held among every process of one database, by an advisory lock.

A held session is a session-level advisory lock (`pg_try_advisory_lock`) on one connection
the store keeps for its locks, however many sessions it holds: PostgreSQL frees them all when
that connection ends, so a worker that dies lets its sessions go without anyone cleaning up.
The lock's key is the 64-bit `hashtextextended` of the store's schema and the session id. The
store's own runs never meet on the server (its `SessionLocks` table orders them first), so one
connection holding every lock is enough. A run that waits asks again after a pause that grows
from 5 ms to 100 ms.

Should the connection drop (`idle_session_timeout`, `pg_terminate_backend`, a failover, a
proxy), every lock on it is lost, and stays lost: another worker may have taken the session
meanwhile, so each hold on it reports the loss (`check`, `wait_lost`) instead of being taken
again. A watching run finds out within `PROBE_SECONDS` and a round trip: one `SELECT 1` on the
lock connection per interval, whoever watches (see `raf.stores._holds.Watch`). The next lock
opens a new connection.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import LiteralString

import anyio
import psycopg
from anyio import to_thread

from raf.stores._holds import Generation, Hold, Watch
from raf.stores._pg_pool import Connection, connect_options
from raf.stores._session_locks import taken

__all__ = ["PROBE_SECONDS", "AdvisoryLocks"]

logger = logging.getLogger("raf")

PROBE_SECONDS = 0.5
"""How often a watched lock connection is asked whether it is still there."""

_TRY_LOCK: LiteralString = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK: LiteralString = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"
_PROBE: LiteralString = "SELECT 1"
_DROPPED = "its PostgreSQL lock connection dropped"
_CLOSED = "the store was closed"


class AdvisoryLocks:
    """Session locks of one store (`namespace`: its schema), on one connection to `dsn`."""

    __slots__ = (
        "_closed",
        "_connection",
        "_dsn",
        "_generation",
        "_guard",
        "_held",
        "_limiter",
        "_namespace",
        "_options",
        "_turn",
        "_watch",
    )

    def __init__(self, dsn: str, namespace: str) -> None:
        self._dsn = dsn
        self._options = connect_options(dsn)
        self._namespace = namespace
        self._connection: Connection | None = None
        self._generation = Generation()  # the holds on `_connection`
        self._held: set[str] = set()  # the keys locked on `_connection`
        self._turn = anyio.Lock()  # one statement at a time on the connection
        # Its own worker thread: a lock statement never waits for threads busy elsewhere.
        self._limiter = anyio.CapacityLimiter(1)
        self._guard = threading.Lock()  # one thread at a time on the connection (see `_run`)
        self._closed = False
        self._watch = Watch(self._probe, interval=PROBE_SECONDS)

    async def acquire(self, session_id: str, wait: bool) -> Hold | None:
        """Lock `session_id` (waiting for it when `wait`): the hold, or None when another
        process holds it."""
        key = f"raf.session:{self._namespace}:{session_id}"
        generations: list[Generation] = []

        async def attempt() -> bool:
            generation = await self._try(key)
            if generation is not None:
                generations.append(generation)
            return generation is not None

        if not await taken(attempt, wait=wait):
            return None

        async def unlock() -> None:
            await self._unlock(key)

        return Hold(session_id, generations[0], unlock, self._watch)

    async def aclose(self) -> None:
        """Close the connection, which lets go of every lock still held."""
        with anyio.CancelScope(shield=True):
            try:
                async with self._turn:
                    await to_thread.run_sync(self._close, limiter=self._limiter)
            finally:
                self._watch.announce()

    def _close(self) -> None:
        """Close the connection (in a worker thread, once a statement left running ends)."""
        with self._guard:
            self._closed = True
            self._lose(_CLOSED)

    async def _try(self, key: str) -> Generation | None:
        """Try to lock `key` once: the generation it is held in, or None."""
        # Not shielded: a caller cancelled before the statement ran is gone at once, and one
        # cancelled while it runs leaves the thread to record the lock or let it go (`_Attempt`).
        attempt = _Attempt()

        def take() -> Generation | None:
            if not attempt.start():
                return None  # the caller gave up before the statement: nothing taken
            with self._guard:
                if not self._run(_TRY_LOCK, key):
                    return None
                if not attempt.keep(lambda: self._held.add(key)):
                    self._run(_UNLOCK, key)  # the caller is gone: nobody would ever release it
                    return None
                return self._generation

        try:
            async with self._turn:
                try:
                    return await to_thread.run_sync(
                        take, limiter=self._limiter, abandon_on_cancel=True
                    )
                except anyio.get_cancelled_exc_class():
                    if attempt.give_up():  # recorded just before the cancellation: let it go
                        with anyio.CancelScope(shield=True), contextlib.suppress(psycopg.Error):
                            await to_thread.run_sync(self._unlock_now, key, limiter=self._limiter)
                    raise
        finally:
            self._watch.announce()  # a dropped connection found on the way lost its holds

    async def _unlock(self, key: str) -> None:
        try:
            async with self._turn:
                # Should the connection be gone, the lock went with it.
                with contextlib.suppress(psycopg.Error):
                    await to_thread.run_sync(self._unlock_now, key, limiter=self._limiter)
        finally:
            self._watch.announce()

    async def _probe(self) -> None:
        """Ask the lock connection whether it is still there (one round trip), losing its
        holds when it is not; nothing to ask while no lock is held."""
        if not self._held:
            return
        async with self._turn:
            await to_thread.run_sync(self._probe_now, limiter=self._limiter, abandon_on_cancel=True)

    def _probe_now(self) -> None:
        with self._guard:
            connection = self._connection
            if self._closed or connection is None:
                return
            try:
                connection.execute(_PROBE)
            except psycopg.Error:
                # Anything else (a cancelled statement, say) leaves the connection, and its
                # locks, where they were.
                if connection.closed or connection.broken:
                    self._dropped()

    def _unlock_now(self, key: str) -> None:
        """Unlock `key` if this connection still holds it (in a worker thread)."""
        with self._guard:
            connection = self._connection
            if key not in self._held or connection is None:
                return  # lost with its connection, or never recorded
            self._held.discard(key)
            try:
                connection.execute(_UNLOCK, (key,))
            except psycopg.OperationalError:
                if not (connection.closed or connection.broken):
                    raise
                self._dropped()

    def _run(self, statement: LiteralString, key: str) -> bool:
        """Run `statement` on the lock connection, connecting a new one when the last one
        dropped (in a worker thread, under `_guard`): its boolean result.

        Under `_guard`: a statement a cancelled caller left to its thread never runs beside
        another one, nor connects a second connection, nor outlives the store's closing.
        """
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
        """A new lock connection; the locks of the old one are lost, never taken again."""
        if self._connection is not None:
            self._dropped()
        connection = psycopg.connect(self._dsn, autocommit=True, **self._options)
        self._connection = connection
        return connection

    def _dropped(self) -> None:
        if self._held:
            logger.warning(
                "the PostgreSQL connection holding session locks dropped: the locks of %d "
                "session(s) are lost, and their runs stop before writing",
                len(self._held),
            )
        self._lose(_DROPPED)

    def _lose(self, reason: str) -> None:
        """Close the lock connection; every hold on it is lost for `reason` (under `_guard`)."""
        self._generation.lose(reason)
        self._generation = Generation()
        self._held.clear()
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


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
