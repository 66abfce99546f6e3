"""`MemoryCheckpointStore`: checkpoints, event log and content store in one process's memory.

Everything is kept as JSON text (and bytes), exactly as the SQLite and PostgreSQL stores keep it
(checkpoint data cut into content-addressed parts, each kept once), so a test on the memory
store sees the same round trips, version checks and errors.

Example:
    >>> import anyio
    >>> from datetime import UTC, datetime
    >>> async def main() -> list[str]:
    ...     store = MemoryCheckpointStore()
    ...     await store.save(Checkpoint(id="c1", session_id="s", workflow_id="w",
    ...                                 superstep=0, created_at=datetime.now(UTC)))
    ...     return await store.list("s")
    >>> anyio.run(main)
    ['c1']
"""

from __future__ import annotations

import bisect
from datetime import datetime
from typing import NamedTuple, Self

import anyio.lowlevel
from anyio import to_thread

from raf.errors import AppendConflict
from raf.stores import _records
from raf.stores._closing import ClosingStore
from raf.stores._fenced import check_follows, refused
from raf.stores._session_locks import SessionLockingStore, SessionLocks
from raf.stores.base import UNCHECKED, Checkpoint, EventChange, Follows, StoredEvent

__all__ = ["MemoryCheckpointStore"]


class _SavedCheckpoint(NamedTuple):
    """A checkpoint's row, as the other stores' `checkpoints` table holds it."""

    id: str
    session_id: str
    workflow_id: str
    superstep: int
    created_at: datetime
    version: int
    data: str


class _LoggedEvent(NamedTuple):
    id: str
    key: str
    kind: str
    data: str


class MemoryCheckpointStore(SessionLockingStore, ClosingStore):
    """A `CheckpointStore` and `EventLog` that lives as long as the object; for tests and demos.

    Checkpoints and events come back as new objects parsed from stored JSON, so changing one
    after saving it never changes what the store holds. Ids order `list`, `latest` and `events`
    (ids from `raf.stores.new_id()` sort by creation time). Two `Session` objects with one id
    on one store run one at a time, as runs of one `Session` object do.

    Example:
        >>> from raf.session import Session
        >>> session = Session(id="chat-1", store=MemoryCheckpointStore())
    """

    def __init__(self) -> None:
        self._checkpoints: dict[str, _SavedCheckpoint] = {}
        self._events: list[_LoggedEvent] = []  # in id order
        self._written: list[_LoggedEvent] = []  # in write order: position = index + 1
        self._event_ids: set[str] = set()
        self._last: dict[str, str] = {}  # each key's greatest event id
        self._objects: dict[str, bytes] = {}
        self._session_locks = SessionLocks()

    async def __aenter__(self) -> Self:
        return self

    async def aclose(self) -> None:
        """Nothing to release; here so every store closes the same way."""
        await _yield_point()

    async def save(self, checkpoint: Checkpoint) -> None:
        """Store `checkpoint` (replacing one with the same id); refuses an unknown version."""
        await self._write(checkpoint, UNCHECKED)

    async def save_following(self, checkpoint: Checkpoint, follows: str | None) -> None:
        """Store `checkpoint` when its session's newest checkpoint is `follows` (None: it
        has none).

        Raises:
            SessionConflict: another writer saved the session since (nothing is written).
            ValueError: `checkpoint.id` does not sort after `follows`.
        """
        check_follows(checkpoint, follows)
        await self._write(checkpoint, follows)

    async def _write(self, checkpoint: Checkpoint, follows: Follows) -> None:
        data, parts = _records.split_checkpoint(checkpoint)
        await _yield_point()
        # From here on no await: the check and the write are one step, as a transaction.
        if follows is not UNCHECKED:
            conflict = refused(checkpoint, follows, self._newest(checkpoint.session_id))
            if conflict is not None:
                raise conflict
        for digest, part in parts.items():
            self._objects.setdefault(digest, part)
        self._checkpoints[checkpoint.id] = _SavedCheckpoint(
            checkpoint.id,
            checkpoint.session_id,
            checkpoint.workflow_id,
            checkpoint.superstep,
            _records.as_utc(checkpoint.created_at),
            checkpoint.version,
            data,
        )

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """The checkpoint `checkpoint_id`; `KeyError` naming it when unknown."""
        await _yield_point()
        saved = self._checkpoints.get(checkpoint_id)
        if saved is None:
            raise _records.unknown_checkpoint(checkpoint_id)
        # Joined in a worker thread, as the other stores do: a long conversation is not the
        # event loop's work. Parts are never removed, so reading them from there is safe.
        objects = self._objects
        return await to_thread.run_sync(
            lambda: _records.join_checkpoint(
                saved, lambda digests: {d: objects[d] for d in digests if d in objects}
            )
        )

    async def latest(self, session_id: str) -> str | None:
        """The greatest (newest) checkpoint id of `session_id`, or None."""
        ids = await self.list(session_id)
        return ids[-1] if ids else None

    async def list(self, session_id: str) -> list[str]:
        """Checkpoint ids of `session_id`, oldest first."""
        await _yield_point()
        return sorted(
            checkpoint_id
            for checkpoint_id, saved in self._checkpoints.items()
            if saved.session_id == session_id
        )

    async def append(
        self, event: StoredEvent, content: bytes | None = None, *, follows: Follows = UNCHECKED
    ) -> None:
        """Append `event` (and store `content` under its hash); with `follows`, only when the
        key's last event is that one (`AppendConflict` otherwise, nothing written).

        Raises:
            AppendConflict: another writer appended to the key since `follows`.
            ValueError: its id is already in the log, does not sort after `follows`, or its
                hash is not the content's.
        """
        data = _records.check_content(event, content)
        if follows is not UNCHECKED:
            _records.check_follows(event, follows)
        await _yield_point()
        found = self._last.get(event.key)
        if follows is not UNCHECKED and found != follows:
            raise AppendConflict(event.key, follows, found)
        if event.id in self._event_ids:
            raise _records.duplicate_event(event.id)
        if data is not None:
            self._objects.setdefault(_records.content_digest(data), data)
        logged = _LoggedEvent(event.id, event.key, event.kind, _records.event_json(event))
        bisect.insort(self._events, logged, key=lambda entry: entry.id)
        self._written.append(logged)
        self._event_ids.add(event.id)
        if found is None or event.id > found:
            self._last[event.key] = event.id

    async def events(self, key: str | None = None) -> list[StoredEvent]:
        """Events (of `key`, when given), in id order (oldest first)."""
        await _yield_point()
        return [
            StoredEvent.model_validate_json(logged.data)
            for logged in self._events
            if key is None or logged.key == key
        ]

    async def changes(self, after: int = 0, *, limit: int = 10_000) -> list[EventChange]:
        """The events appended after position `after`, in write order (at most `limit`)."""
        await _yield_point()
        start = max(after, 0)
        return [
            EventChange(position, logged.id, logged.kind, logged.key)
            for position, logged in enumerate(self._written[start : start + limit], start=start + 1)
        ]

    async def put(self, content: bytes) -> str:
        """Store `content` once under its sha256 hex digest, and return the digest."""
        await _yield_point()
        digest = _records.content_digest(content)
        self._objects.setdefault(digest, bytes(content))
        return digest

    async def get(self, digest: str) -> bytes:
        """The content stored under `digest`; `KeyError` naming it when unknown."""
        await _yield_point()
        try:
            return self._objects[digest]
        except KeyError:
            raise _records.unknown_content(digest) from None

    def _newest(self, session_id: str) -> str | None:
        return max(
            (key for key, saved in self._checkpoints.items() if saved.session_id == session_id),
            default=None,
        )


async def _yield_point() -> None:
    """Let other tasks run and cancellation arrive, as an I/O-backed store would."""
    await anyio.lowlevel.checkpoint()
