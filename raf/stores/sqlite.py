"""`SqliteCheckpointStore`: the embedded default store, one SQLite file in WAL mode.

One connection, used from worker threads (`anyio.to_thread`, so it runs on asyncio and trio)
one operation at a time under an `anyio.Lock`. Every write is a single transaction, so a process
killed at any moment leaves the file consistent with every save that returned. A cancelled caller
interrupts its statement (or its wait for another writer's lock) instead of waiting it out.

Example:
    >>> import anyio, tempfile, os
    >>> from datetime import UTC, datetime
    >>> async def main(path: str) -> str | None:
    ...     async with SqliteCheckpointStore(path) as store:
    ...         await store.save(Checkpoint(id="c1", session_id="s", workflow_id="w",
    ...                                     superstep=0, created_at=datetime.now(UTC)))
    ...     async with SqliteCheckpointStore(path) as reopened:
    ...         return await reopened.latest("s")
    >>> anyio.run(main, os.path.join(tempfile.mkdtemp(), "runs.db"))
    'c1'
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Self, TypeVar

import anyio
from anyio import to_thread

from raf.errors import AppendConflict
from raf.stores import _records, _sqlite_file
from raf.stores._closing import ClosingStore
from raf.stores._fenced import check_follows, refused
from raf.stores._file_locks import FileLocks
from raf.stores._interruptible import Interrupted, close_in_thread, run_interruptible
from raf.stores._parts import KnownParts
from raf.stores._session_locks import SessionLockingStore, SessionLocks
from raf.stores.base import UNCHECKED, Checkpoint, EventChange, Follows, SessionLock, StoredEvent

__all__ = ["SqliteCheckpointStore"]

T = TypeVar("T")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # `data` is the JSON of the whole checkpoint; the other columns are for finding it.
    """CREATE TABLE IF NOT EXISTS checkpoints (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        workflow_id TEXT NOT NULL,
        superstep INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        version INTEGER NOT NULL,
        data TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS checkpoints_session ON checkpoints (session_id, id)",
    # `id` is ULID-like (sorts by time); `meta` is a JSON object.
    """CREATE TABLE IF NOT EXISTS events (
        id TEXT PRIMARY KEY,
        occurred_at TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        hash TEXT,
        meta TEXT NOT NULL,
        code_rev TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS events_key ON events (key, id)",
    "CREATE TABLE IF NOT EXISTS objects (hash TEXT PRIMARY KEY, content BLOB NOT NULL)",
)

_SAVE = (
    "INSERT OR REPLACE INTO checkpoints"
    " (id, session_id, workflow_id, superstep, created_at, version, data)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_NEWEST = "SELECT id FROM checkpoints WHERE session_id = ? ORDER BY id DESC LIMIT 1"
_LOAD = f"SELECT {_records.CHECKPOINT_COLUMNS} FROM checkpoints WHERE id = ?"
_EVENT_COLUMNS = "id, occurred_at, kind, key, hash, meta, code_rev"
_APPEND = f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
_PUT = "INSERT OR IGNORE INTO objects (hash, content) VALUES (?, ?)"
_LAST_OF_KEY = "SELECT id FROM events WHERE key = ? ORDER BY id DESC LIMIT 1"
# Writes are serialized (BEGIN IMMEDIATE) and rows never deleted, so rowid is write order.
_CHANGES = "SELECT rowid, id, kind, key FROM events WHERE rowid > ? ORDER BY rowid LIMIT ?"
_BATCH = 500  # parts read by one statement (SQLite allows 32,766 parameters)

# How long a statement waits for another connection's write lock before "database is locked".
_BUSY_TIMEOUT_SECONDS = 30.0
# Pauses between attempts while locked out: SQLite's own busy handler cannot be interrupted.
_FIRST_RETRY_SECONDS = 0.001
_LONGEST_RETRY_SECONDS = 0.05


class SqliteCheckpointStore(SessionLockingStore, ClosingStore):
    """A `CheckpointStore` and `EventLog` in one SQLite file (WAL), safe against a killed process.

    The file is opened on first use (or on `async with`) and created with its tables when
    missing; a new store object on the same file sees everything saved before. Ids order
    `list`, `latest` and `events` (ids from `raf.stores.new_id()` sort by creation time). A
    session runs in one process at a time: each run locks it in `PATH-sessions`, a file beside
    the database, and the lock goes when the process dies (on Linux; elsewhere a session is
    single-writer within each process).

    Args:
        path: the database file; `":memory:"` keeps it in memory for this object only.

    Example:
        >>> store = SqliteCheckpointStore("runs.db")
        >>> # async with store: checkpoint_id = await store.latest("chat-1")
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path: str = os.fspath(path)
        self._lock = anyio.Lock()
        self._connection: sqlite3.Connection | None = None
        self._closed = False
        shared = self.path != ":memory:" and FileLocks.supported()
        self._file_locks = FileLocks(self.path + "-sessions") if shared else None
        self._session_locks = SessionLocks(self._acquire_elsewhere if shared else None)
        self._known = KnownParts()

    def __repr__(self) -> str:
        return f"SqliteCheckpointStore({self.path!r})"

    async def __aenter__(self) -> Self:
        await self._run(lambda _connection: None)
        return self

    async def aclose(self) -> None:
        """Close the file; idempotent. Using the store afterwards raises `ClosedResourceError`."""
        with anyio.CancelScope(shield=True):
            async with self._lock:
                self._closed = True
                connection, self._connection = self._connection, None
                if connection is not None:
                    await close_in_thread(connection.close)
                if self._file_locks is not None:
                    self._file_locks.close()

    async def save(self, checkpoint: Checkpoint) -> None:
        """Store `checkpoint` in one transaction (replacing one with the same id).

        Raises:
            CheckpointVersionError: its `version` is not one this raf knows.
        """
        await self._write(checkpoint, UNCHECKED)

    async def save_following(self, checkpoint: Checkpoint, follows: str | None) -> None:
        """Store `checkpoint` when its session's newest checkpoint is `follows` (None: it
        has none), looked at in the transaction that writes it.

        Raises:
            SessionConflict: another writer saved the session since (nothing is written).
            ValueError: `checkpoint.id` does not sort after `follows`.
            CheckpointVersionError: its `version` is not one this raf knows.
        """
        check_follows(checkpoint, follows)
        await self._write(checkpoint, follows)

    async def _write(self, checkpoint: Checkpoint, follows: Follows) -> None:
        known = self._known

        def write(connection: sqlite3.Connection) -> None:
            # Cut up in the worker thread: a long conversation is not the event loop's work.
            row, parts = _records.checkpoint_row(
                checkpoint, _records.format_time(checkpoint.created_at), known
            )
            new = known.new(parts)
            connection.execute("BEGIN IMMEDIATE")
            if follows is not UNCHECKED:
                newest: tuple[str] | None = connection.execute(
                    _NEWEST, (checkpoint.session_id,)
                ).fetchone()
                conflict = refused(checkpoint, follows, None if newest is None else newest[0])
                if conflict is not None:
                    raise conflict  # rolled back by `_retrying`
            connection.executemany(_PUT, new.items())
            connection.execute(_SAVE, row)
            connection.execute("COMMIT")
            known.add(new.keys())

        await self._run(write)

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """The checkpoint `checkpoint_id`.

        Raises:
            KeyError: no checkpoint has that id (the message names it).
            CheckpointVersionError: it was written in a format version this raf does not know.
        """
        known = self._known

        def read(connection: sqlite3.Connection) -> Checkpoint | None:
            # Parsed, joined and validated in the worker thread, as `save` cuts it up there.
            row: tuple[Any, ...] | None = connection.execute(_LOAD, (checkpoint_id,)).fetchone()
            if row is None:
                return None
            return _records.join_checkpoint(row, lambda digests: _parts(connection, digests, known))

        checkpoint = await self._run(read)
        if checkpoint is None:
            raise _records.unknown_checkpoint(checkpoint_id)
        return checkpoint

    async def latest(self, session_id: str) -> str | None:
        """The greatest (newest) checkpoint id of `session_id`, or None."""
        row: tuple[str] | None = await self._fetch_one(
            "SELECT id FROM checkpoints WHERE session_id = ? ORDER BY id DESC LIMIT 1",
            (session_id,),
        )
        return None if row is None else row[0]

    async def list(self, session_id: str) -> list[str]:
        """Checkpoint ids of `session_id`, oldest first."""
        rows: list[tuple[str]] = await self._fetch_all(
            "SELECT id FROM checkpoints WHERE session_id = ? ORDER BY id", (session_id,)
        )
        return [checkpoint_id for (checkpoint_id,) in rows]

    async def append(
        self, event: StoredEvent, content: bytes | None = None, *, follows: Follows = UNCHECKED
    ) -> None:
        """Append `event`, with `content` stored under its hash in the same transaction
        (content first, event last); with `follows`, only when the key's last event is that
        one.

        Raises:
            AppendConflict: another writer appended to the key since `follows` (nothing is
                written).
            ValueError: its id is already in the log, does not sort after `follows`, or its
                hash is not the content's.
        """
        row = _records.event_row(event, _records.format_time(event.occurred_at))
        data = _records.check_content(event, content)
        if follows is not UNCHECKED:
            _records.check_follows(event, follows)

        def write(connection: sqlite3.Connection) -> None:
            connection.execute("BEGIN IMMEDIATE")
            if follows is not UNCHECKED:
                last: tuple[str] | None = connection.execute(_LAST_OF_KEY, (event.key,)).fetchone()
                found = None if last is None else last[0]
                if found != follows:
                    raise AppendConflict(event.key, follows, found)  # rolled back by `_retrying`
            if data is not None:
                connection.execute(_PUT, (event.hash, data))
            connection.execute(_APPEND, row)
            connection.execute("COMMIT")

        try:
            await self._run(write)
        except sqlite3.IntegrityError:
            raise _records.duplicate_event(event.id) from None

    async def events(self, key: str | None = None) -> list[StoredEvent]:
        """Events (of `key`, when given), in id order (oldest first).

        Raises:
            CheckpointError: naming the event, when a row is not an event's (meta that is
                not a JSON object, a time that is not one).
        """
        if key is None:
            rows = await self._fetch_all(f"SELECT {_EVENT_COLUMNS} FROM events ORDER BY id", ())
        else:
            rows = await self._fetch_all(
                f"SELECT {_EVENT_COLUMNS} FROM events WHERE key = ? ORDER BY id", (key,)
            )
        return [_event_from_row(row) for row in rows]

    async def changes(self, after: int = 0, *, limit: int = 10_000) -> list[EventChange]:
        """The events appended after position `after` (a rowid), in write order."""
        rows: list[tuple[int, str, str, str]] = await self._run(
            lambda connection: connection.execute(_CHANGES, (after, limit)).fetchall()
        )
        return [EventChange(*row) for row in rows]

    async def put(self, content: bytes) -> str:
        """Store `content` once under its sha256 hex digest, and return the digest."""
        digest = _records.content_digest(content)
        await self._run(lambda connection: connection.execute(_PUT, (digest, bytes(content))))
        return digest

    async def get(self, digest: str) -> bytes:
        """The content stored under `digest`; `KeyError` naming it when unknown."""
        row: tuple[bytes] | None = await self._fetch_one(
            "SELECT content FROM objects WHERE hash = ?", (digest,)
        )
        if row is None:
            raise _records.unknown_content(digest)
        return row[0]

    async def _acquire_elsewhere(self, session_id: str, wait: bool) -> SessionLock | None:
        if self._closed or self._file_locks is None:
            raise anyio.ClosedResourceError("the SQLite store is closed")
        return await self._file_locks.acquire(session_id, wait)

    async def _fetch_one(self, query: str, parameters: tuple[str, ...]) -> Any:
        """The first row of `query` or None (sqlite3 rows are untyped; callers annotate them)."""
        return await self._run(lambda connection: connection.execute(query, parameters).fetchone())

    async def _fetch_all(self, query: str, parameters: tuple[str, ...]) -> list[Any]:
        """All rows of `query`."""
        return await self._run(lambda connection: connection.execute(query, parameters).fetchall())

    async def _run(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        """Run `operation` on the connection in a worker thread, one operation at a time."""
        async with self._lock:
            if self._closed:
                raise anyio.ClosedResourceError(f"{self!r} is closed")
            try:
                connection = self._connection
                if connection is None:
                    connection = self._connection = await _open(self.path)
            except sqlite3.DatabaseError as error:
                _refuse_damaged(error, self.path)
                raise

            def abandon() -> None:
                # The call outlived its grace: its thread closes the connection when done.
                if self._connection is connection:
                    self._connection = None

            try:
                return await _interruptibly(connection, operation, abandon)
            except sqlite3.DatabaseError as error:
                _refuse_damaged(error, self.path)
                raise


async def _open(path: str) -> sqlite3.Connection:
    """Open the database at `path` (creating it when nothing is there) and check that it is a
    raf store of a layout this raf reads."""
    if path != ":memory:":
        await to_thread.run_sync(_sqlite_file.create_or_check, path, partial(_prepare, path=path))
    connection = await to_thread.run_sync(
        lambda: sqlite3.connect(
            path,
            timeout=0,  # no busy handler: `_retrying` waits for locks, and can be interrupted
            isolation_level=None,  # autocommit: each statement is its own transaction
            check_same_thread=False,  # worker threads take turns under the store's lock
        )
    )
    abandoned = threading.Event()
    try:
        await _interruptibly(connection, partial(_prepare, path=path), abandoned.set)
    except BaseException:
        if not abandoned.is_set():  # else its own thread closes it
            await close_in_thread(connection.close)
        raise
    return connection


def _prepare(connection: sqlite3.Connection, *, path: str) -> None:
    """Make the database a raf store of this layout, in one transaction."""
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute("BEGIN IMMEDIATE")
    _sqlite_file.check_tables(connection, path)
    for statement in _SCHEMA:
        connection.execute(statement)
    _check_schema_version(connection, path)
    connection.execute("COMMIT")


def _refuse_damaged(error: sqlite3.DatabaseError, path: str) -> None:
    """Raise the error naming the file and what to do, when `error` says it is damaged."""
    if _sqlite_file.is_damage(error):
        raise _sqlite_file.damaged(path, f"SQLite says: {error}") from error


async def _interruptibly(
    connection: sqlite3.Connection,
    operation: Callable[[sqlite3.Connection], T],
    abandon: Callable[[], object],
) -> T:
    """Run `operation` in a worker thread; a cancelled caller interrupts it and rolls it back.

    Should the interrupted operation run on past the grace period, `abandon()` runs and the
    operation's thread closes the connection once it ends.
    """
    interrupted = threading.Event()

    def interrupt() -> None:
        interrupted.set()  # stops waiting for a lock
        connection.interrupt()  # stops a running statement; harmless once none runs

    return await run_interruptible(
        lambda: _retrying(connection, operation, interrupted),
        interrupt,
        abandon=abandon,
        orphaned=connection.close,
    )


def _retrying(
    connection: sqlite3.Connection,
    operation: Callable[[sqlite3.Connection], T],
    interrupted: threading.Event,
) -> T:
    """`operation`, attempted again while another connection holds the lock (up to a limit)."""
    deadline = time.monotonic() + _BUSY_TIMEOUT_SECONDS
    pause = _FIRST_RETRY_SECONDS
    while True:
        try:
            return operation(connection)
        except sqlite3.OperationalError as error:
            if not _is_busy(error) or time.monotonic() >= deadline:
                raise
        finally:
            # An error or interrupt mid-transaction leaves nothing of it behind.
            if connection.in_transaction:
                connection.rollback()
        if interrupted.wait(pause):
            raise Interrupted("the SQLite operation was interrupted while waiting for a lock")
        pause = min(pause * 2, _LONGEST_RETRY_SECONDS)


def _is_busy(error: sqlite3.OperationalError) -> bool:
    """Whether `error` is SQLITE_BUSY (any extended code): the database is locked right now."""
    return error.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY


def _check_schema_version(connection: sqlite3.Connection, path: str) -> None:
    """Record the layout version in a new file; migrate a file of an older layout; refuse a
    file of another version."""
    row: tuple[str] | None = connection.execute(
        "SELECT value FROM meta WHERE key = 'schema_version'"
    ).fetchone()
    if row is not None and row[0] == str(_records.SCHEMA_VERSION):
        return
    if row is not None and not _records.migrates(row[0]):
        raise _records.schema_mismatch(row[0], f"SQLite file {path!r}")
    if row is not None:
        _migrate(connection)
    connection.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
        (str(_records.SCHEMA_VERSION),),
    )


def _migrate(connection: sqlite3.Connection) -> None:
    """Rewrite every checkpoint of layout 1 (its whole JSON in the row) as a root and parts."""
    ids: list[tuple[str]] = connection.execute("SELECT id FROM checkpoints").fetchall()
    for (checkpoint_id,) in ids:  # one at a time: a layout-1 row may be very large
        (text,) = connection.execute(
            "SELECT data FROM checkpoints WHERE id = ?", (checkpoint_id,)
        ).fetchone()
        root, parts = _records.migrated_checkpoint(checkpoint_id, text)
        connection.executemany(_PUT, parts.items())
        connection.execute("UPDATE checkpoints SET data = ? WHERE id = ?", (root, checkpoint_id))


def _parts(
    connection: sqlite3.Connection, digests: list[str], known: KnownParts
) -> dict[str, bytes]:
    """The stored parts among `digests`, in batches of `_BATCH` a statement."""
    found: dict[str, bytes] = {}
    for start in range(0, len(digests), _BATCH):
        batch = digests[start : start + _BATCH]
        marks = ", ".join("?" * len(batch))
        query = f"SELECT hash, content FROM objects WHERE hash IN ({marks})"
        found.update(connection.execute(query, batch).fetchall())
    known.add(found.keys())
    return found


def _event_from_row(row: tuple[object, ...]) -> StoredEvent:
    event_id, occurred_at, kind, key, digest, meta, code_rev = row
    return _records.decode_event(
        str(event_id),
        str(occurred_at),
        str(kind),
        str(key),
        None if digest is None else str(digest),
        str(meta),
        None if code_rev is None else str(code_rev),
    )
