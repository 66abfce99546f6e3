"""`PostgresCheckpointStore`: checkpoints, event log and content store shared by several workers.

Uses the synchronous psycopg 3 driver in worker threads (so it runs on asyncio and trio) with a
small pool of connections. Tables are created on first use, in `schema` when one is given.
JSON goes into `json` columns, which keep the text exactly as written (key order, and `\\u0000`
in strings, which `jsonb` refuses), so a checkpoint loads back exactly as it was saved.

Example:
    >>> store = PostgresCheckpointStore("postgresql://postgres@127.0.0.1:5432/raf")
    >>> # async with store: await store.save(checkpoint)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, LiteralString, Self, TypeVar

import anyio

from raf.errors import AppendConflict
from raf.stores import _records
from raf.stores._closing import ClosingStore
from raf.stores._fenced import check_follows, refused
from raf.stores._parts import KnownParts
from raf.stores._session_locks import SessionLockingStore, SessionLocks
from raf.stores.base import UNCHECKED, Checkpoint, EventChange, Follows, StoredEvent

if TYPE_CHECKING:
    from collections.abc import Callable

    from psycopg import sql

    from raf.stores._pg_locks import AdvisoryLocks
    from raf.stores._pg_pool import Connection, ConnectionPool
    from raf.stores._pg_sql import Queries

__all__ = ["PostgresCheckpointStore"]

T = TypeVar("T")

# Taken by fenced saves of one session (its key names the schema and the session), for
# the rest of their transaction.
_SAVE_LOCK: LiteralString = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"


class PostgresCheckpointStore(SessionLockingStore, ClosingStore):
    """A `CheckpointStore` and `EventLog` in PostgreSQL, for several workers sharing runs.

    Every write is one transaction; any worker's store object sees what the others saved.
    Ids order `list`, `latest` and `events` (compared byte-wise, as in the other stores; ids
    from `raf.stores.new_id()` sort by creation time). Cancelling a caller cancels its
    statement on the server (say, one waiting for a lock) and rolls it back. A session runs on
    one worker at a time: each run holds an advisory lock on it (all on one connection the
    store keeps for them), which PostgreSQL lets go when the worker dies.

    Args:
        dsn: a libpq connection string, say `"postgresql://user@host:5432/db"`. Connecting
            gives up after 10 s unless it sets `connect_timeout` (or `PGCONNECT_TIMEOUT` does).
        schema: put the tables in this schema (created when missing) instead of the
            connection's search path; isolates tests or tenants.
        max_connections: how many connections (and concurrent operations) at most.

    Raises:
        ImportError: psycopg 3 is not installed (`pip install 'raf[postgres]'`).

    Example:
        >>> store = PostgresCheckpointStore("postgresql://localhost/raf", schema="runs")
        >>> # async with store: ids = await store.list("chat-1")
    """

    def __init__(self, dsn: str, *, schema: str | None = None, max_connections: int = 4) -> None:
        try:
            from raf.stores._pg_locks import AdvisoryLocks
            from raf.stores._pg_pool import ConnectionPool
            from raf.stores._pg_sql import queries
        except ImportError as error:
            raise ImportError(
                "PostgresCheckpointStore needs psycopg 3: pip install 'raf[postgres]' "
                "(or 'psycopg[binary]>=3.2')"
            ) from error
        self.schema = schema
        self._pool: ConnectionPool = ConnectionPool(dsn, max_size=max_connections)
        self._queries: Queries = queries(schema)
        self._advisory: AdvisoryLocks = AdvisoryLocks(dsn, schema or "")
        self._session_locks = SessionLocks(self._advisory.acquire)
        self._ready = False
        self._ready_lock = anyio.Lock()
        self._known = KnownParts()

    def __repr__(self) -> str:
        return f"PostgresCheckpointStore(schema={self.schema!r})"

    async def __aenter__(self) -> Self:
        try:
            await self._run(lambda _connection: None)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def aclose(self) -> None:
        """Close the connections; idempotent. Using the store afterwards raises `ClosedResourceError`."""
        await self._pool.aclose()
        await self._advisory.aclose()

    async def save(self, checkpoint: Checkpoint) -> None:
        """Store `checkpoint` in one transaction (replacing one with the same id).

        Raises:
            CheckpointVersionError: its `version` is not one this raf knows.
        """
        await self._write(checkpoint, UNCHECKED)

    async def save_following(self, checkpoint: Checkpoint, follows: str | None) -> None:
        """Store `checkpoint` when its session's newest checkpoint is `follows` (None: it
        has none). Fenced saves of one session take a transaction lock of it in turn, so
        the one that looks second sees what the first saved.

        Raises:
            SessionConflict: another writer saved the session since (nothing is written).
            ValueError: `checkpoint.id` does not sort after `follows`.
            CheckpointVersionError: its `version` is not one this raf knows.
        """
        check_follows(checkpoint, follows)
        await self._write(checkpoint, follows)

    async def _write(self, checkpoint: Checkpoint, follows: Follows) -> None:
        queries, known = self._queries, self._known
        fence = f"raf.checkpoints:{self.schema or ''}:{checkpoint.session_id}"

        def write(connection: Connection) -> None:
            # Cut up in the worker thread: a long conversation is not the event loop's work.
            row, parts = _records.checkpoint_row(
                checkpoint, _records.as_utc(checkpoint.created_at), known
            )
            new = known.new(parts)
            with connection.transaction():
                if follows is not UNCHECKED:
                    connection.execute(_SAVE_LOCK, (fence,))
                    newest = connection.execute(queries.latest, (checkpoint.session_id,))
                    found = newest.fetchone()
                    conflict = refused(checkpoint, follows, None if found is None else found[0])
                    if conflict is not None:
                        raise conflict
                if new:
                    with connection.cursor() as cursor:
                        cursor.executemany(queries.put, list(new.items()))
                connection.execute(queries.save, row)
            known.add(new.keys())

        await self._run(write)

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """The checkpoint `checkpoint_id`.

        Raises:
            KeyError: no checkpoint has that id (the message names it).
            CheckpointVersionError: it was written in a format version this raf does not know.
        """
        # PostgreSQL text cannot hold NUL, so no stored id has one.
        if _has_nul(checkpoint_id):
            raise _records.unknown_checkpoint(checkpoint_id)
        queries, known = self._queries, self._known

        def read(connection: Connection) -> Checkpoint | None:
            # Parsed, joined and validated in the worker thread, as `save` cuts it up there.
            row = connection.execute(queries.load, (checkpoint_id,)).fetchone()
            if row is None:
                return None
            return _records.join_checkpoint(
                row, lambda digests: _parts(connection, queries, digests, known)
            )

        checkpoint = await self._run(read)
        if checkpoint is None:
            raise _records.unknown_checkpoint(checkpoint_id)
        return checkpoint

    async def latest(self, session_id: str) -> str | None:
        """The greatest (newest) checkpoint id of `session_id`, or None."""
        if _has_nul(session_id):
            return None
        row = await self._fetch_one(self._queries.latest, (session_id,))
        return None if row is None else row[0]

    async def list(self, session_id: str) -> list[str]:
        """Checkpoint ids of `session_id`, oldest first."""
        if _has_nul(session_id):
            return []
        rows = await self._fetch_all(self._queries.list, (session_id,))
        return [checkpoint_id for (checkpoint_id,) in rows]

    async def append(
        self, event: StoredEvent, content: bytes | None = None, *, follows: Follows = UNCHECKED
    ) -> None:
        """Append `event`, with `content` stored under its hash in the same transaction
        (content first, event last); with `follows`, only when the key's last event is that
        one. Appends take one transaction lock of the store's schema in turn, so positions
        (`changes`) grow in commit order.

        Raises:
            AppendConflict: another writer appended to the key since `follows` (nothing is
                written).
            ValueError: its id is already in the log, does not sort after `follows`, or its
                hash is not the content's.
        """
        row = _records.event_row(event, _records.as_utc(event.occurred_at))
        data = _records.check_content(event, content)
        if follows is not UNCHECKED:
            _records.check_follows(event, follows)
        queries = self._queries

        def write(connection: Connection) -> None:
            with connection.transaction():
                connection.execute(queries.append_lock)
                if follows is not UNCHECKED:
                    last = connection.execute(queries.last_of_key, (event.key,)).fetchone()
                    found = None if last is None else str(last[0])
                    if found != follows:
                        raise AppendConflict(event.key, follows, found)
                if data is not None:
                    connection.execute(queries.put, (event.hash, data))
                if connection.execute(queries.append, row).rowcount == 0:
                    # Raised inside the transaction, so the content goes back out with it.
                    raise _records.duplicate_event(event.id)

        await self._run(write)

    async def events(self, key: str | None = None) -> list[StoredEvent]:
        """Events (of `key`, when given), in id order (oldest first).

        Raises:
            CheckpointError: naming the event, when a row is not an event's (say, meta that
                is not a JSON object).
        """
        if key is None:
            rows = await self._fetch_all(self._queries.all_events, ())
        elif _has_nul(key):
            rows = []
        else:
            rows = await self._fetch_all(self._queries.events_of_key, (key,))
        return [_records.decode_event(*row) for row in rows]

    async def changes(self, after: int = 0, *, limit: int = 10_000) -> list[EventChange]:
        """The events appended after position `after`, in write (commit) order."""
        query = self._queries.changes
        rows = await self._run(
            lambda connection: connection.execute(query, (after, limit)).fetchall()
        )
        return [EventChange(int(p), str(i), str(k), str(key)) for p, i, k, key in rows]

    async def put(self, content: bytes) -> str:
        """Store `content` once under its sha256 hex digest, and return the digest."""
        digest = _records.content_digest(content)
        row = (digest, bytes(content))
        await self._run(lambda connection: connection.execute(self._queries.put, row))
        return digest

    async def get(self, digest: str) -> bytes:
        """The content stored under `digest`; `KeyError` naming it when unknown."""
        row = None if _has_nul(digest) else await self._fetch_one(self._queries.get, (digest,))
        if row is None:
            raise _records.unknown_content(digest)
        return bytes(row[0])

    async def _fetch_one(
        self, query: sql.Composed, parameters: tuple[str, ...]
    ) -> tuple[Any, ...] | None:
        return await self._run(lambda connection: connection.execute(query, parameters).fetchone())

    async def _fetch_all(
        self, query: sql.Composed, parameters: tuple[str, ...]
    ) -> list[tuple[Any, ...]]:
        return await self._run(lambda connection: connection.execute(query, parameters).fetchall())

    async def _run(self, operation: Callable[[Connection], T]) -> T:
        """Run `operation` on a pooled connection, creating the tables first when needed."""
        if not self._ready:
            async with self._ready_lock:
                if not self._ready:
                    await self._pool.run(self._create_schema)
                    self._ready = True
        return await self._pool.run(operation)

    def _create_schema(self, connection: Connection) -> None:
        with connection.transaction():
            # Workers starting together must not race on CREATE ... IF NOT EXISTS.
            connection.execute(self._queries.schema_lock)
            for statement in self._queries.create:
                connection.execute(statement)
            row = connection.execute(self._queries.schema_version).fetchone()
            if row is not None and row[0] == str(_records.SCHEMA_VERSION):
                return
            if row is not None and not _records.migrates(row[0]):
                where = f"PostgreSQL schema {self.schema or '(search path)'!r}"
                raise _records.schema_mismatch(row[0], where)
            if row is not None:
                self._migrate(connection)
            connection.execute(self._queries.set_schema_version, (str(_records.SCHEMA_VERSION),))

    def _migrate(self, connection: Connection) -> None:
        """Rewrite every checkpoint of layout 1 (its whole JSON in the row) as a root and parts."""
        queries = self._queries
        ids = [row[0] for row in connection.execute(queries.all_checkpoint_ids).fetchall()]
        for checkpoint_id in ids:  # one at a time: a layout-1 row may be very large
            found = connection.execute(queries.load, (checkpoint_id,)).fetchone()
            if found is None:
                continue
            root, parts = _records.migrated_checkpoint(checkpoint_id, found[-1])
            if parts:
                with connection.cursor() as cursor:
                    cursor.executemany(queries.put, list(parts.items()))
            connection.execute(queries.set_data, (root, checkpoint_id))


def _parts(
    connection: Connection, queries: Queries, digests: list[str], known: KnownParts
) -> dict[str, bytes]:
    """The stored parts among `digests` (one statement)."""
    rows = connection.execute(queries.get_many, (digests,)).fetchall()
    found = {str(digest): bytes(content) for digest, content in rows}
    known.add(found.keys())
    return found


def _has_nul(text: object) -> bool:
    """Whether `text` is no stored name: not text (None, say), or text holding NUL, which
    PostgreSQL text cannot. Such a name is looked up as absent, as the other stores do."""
    return not isinstance(text, str) or "\x00" in text
