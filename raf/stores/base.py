"""The `CheckpointStore` protocol and the records stores keep.

A store keeps checkpoints (versioned JSON written by the engine after each superstep, nested
workflows' supersteps included) and,
for the SQLite and PostgreSQL stores, an append-only event log and a content-addressed object
store used by moderated role workflows.

Example:
    >>> async def newest(store: CheckpointStore, session_id: str) -> Checkpoint | None:
    ...     checkpoint_id = await store.latest(session_id)
    ...     return None if checkpoint_id is None else await store.load(checkpoint_id)
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, Final, Literal, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from raf._defaults import new_dict

CHECKPOINT_FORMAT_VERSION = 1
SUPPORTED_CHECKPOINT_VERSIONS: frozenset[int] = frozenset({CHECKPOINT_FORMAT_VERSION})
"""Checkpoint format versions this raf reads and writes."""


class Checkpoint(BaseModel):
    """One saved state of a workflow run, taken after a superstep of the run or of a workflow
    nested in it."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    version: int = CHECKPOINT_FORMAT_VERSION
    """Format version of `data`; a store refuses versions it does not know."""
    id: str
    """Unique id (sortable by creation time)."""
    session_id: str
    """The session the run belongs to."""
    workflow_id: str
    """The workflow (root scope) that was running."""
    superstep: int
    """Index of the root's last completed superstep (-1 when a nested workflow's checkpoint is
    taken inside the root's first)."""
    created_at: datetime
    """When it was taken (UTC)."""
    data: dict[str, Any] = Field(default_factory=new_dict)
    """The engine's JSON state: pending messages, node states, session state, requests, scopes."""


class StoredEvent(BaseModel):
    """One entry of the append-only event log (`events(id, occurred_at, kind, key, hash, meta, code_rev)`)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str
    """ULID-like id, sortable by time."""
    occurred_at: datetime
    """When it happened (UTC)."""
    kind: str
    """What happened, say `review.__start__` or `review.critic`."""
    key: str
    """What it belongs to (a topic or session id)."""
    hash: str | None = None
    """sha256 of its content in the object store, if any."""
    meta: dict[str, Any] = Field(default_factory=new_dict)
    """Structured data of the event."""
    code_rev: str | None = None
    """Revision of the code that wrote it."""


@runtime_checkable
class CheckpointStore(Protocol):
    """Where workflow runs checkpoint; implement it to add a backend."""

    async def save(self, checkpoint: Checkpoint) -> None:
        """Store `checkpoint` atomically."""
        ...

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """The checkpoint `checkpoint_id`; raises `KeyError` naming it when unknown."""
        ...

    async def latest(self, session_id: str) -> str | None:
        """The newest checkpoint id of `session_id`, or None."""
        ...

    async def list(self, session_id: str) -> list[str]:
        """Checkpoint ids of `session_id`, oldest first."""
        ...


class _Unchecked(Enum):
    UNCHECKED = "unchecked"

    def __repr__(self) -> str:
        return "UNCHECKED"


UNCHECKED: Final = _Unchecked.UNCHECKED
"""`append(..., follows=UNCHECKED)` (the default): append whatever the key holds."""

Follows = str | None | Literal[_Unchecked.UNCHECKED]
"""What an append follows: the key's last event id, None (the key is empty), or `UNCHECKED`."""


class EventChange(NamedTuple):
    """One event as `EventLog.changes` lists it: where it is in write order, and whose it is."""

    position: int
    """Its place in the log's write order (greater for every later append)."""
    id: str
    """The event's id."""
    kind: str
    """The event's kind."""
    key: str
    """The event's key."""


@runtime_checkable
class EventLog(Protocol):
    """An append-only event log with a content-addressed object store."""

    async def append(
        self, event: StoredEvent, content: bytes | None = None, *, follows: Follows = UNCHECKED
    ) -> None:
        """Append `event`; with `content`, store it under `event.hash` in the same transaction.

        The content is written first and the event last, atomically: a crash leaves both or
        neither, so an event never names content the store does not have. With `follows`
        (the id of the key's last event as the writer read it, or None for a key with no
        event) the append is refused with `AppendConflict`, writing nothing, when another
        writer appended to the key since; the event's id must then sort after `follows`.
        """
        ...

    async def events(self, key: str | None = None) -> list[StoredEvent]:
        """Events (of `key`, when given), oldest first.

        Raises:
            CheckpointError: naming the event, when a stored row is not an event's.
        """
        ...

    async def changes(self, after: int = 0, *, limit: int = 10_000) -> list[EventChange]:
        """The events appended after position `after`, in write order, at most `limit`.

        A reader keeps the last position it saw and asks for what came after it: an idle
        log answers with nothing, however long it is. Only the columns that say whose an
        event is are read, so a damaged row never stops it.
        """
        ...

    async def put(self, content: bytes) -> str:
        """Store `content`; return its sha256 hex digest."""
        ...

    async def get(self, digest: str) -> bytes:
        """The content stored under `digest`; raises `KeyError` when unknown."""
        ...


class SessionLock(Protocol):
    """One run's hold on a session, given by `SessionLocking.lock_session`.

    A hold can be lost without its holder's doing (a PostgreSQL lock connection dropped, a
    SQLite lock file replaced): another worker may then take the session. A writer calls
    `check()` before it writes, and may watch `wait_lost()` to stop at once. A released hold
    counts as gone too: `check()` raises and `wait_lost()` returns.

    Example:
        >>> async def save_if_held(lock: SessionLock, store: FencedSaves, new: Checkpoint,
        ...                        follows: str | None) -> None:
        ...     await lock.check()  # SessionLockLost: stop before writing
        ...     await store.save_following(new, follows)
    """

    async def release(self) -> None:
        """Let the next run have the session; idempotent, and never raises."""
        ...

    async def check(self) -> None:
        """Raise `SessionLockLost` when the hold is gone (lost, or released).

        At most one round trip to the store's server, and none once the store knows the hold
        is lost."""
        ...

    async def wait_lost(self) -> None:
        """Return once the hold is gone (lost, or released): within about a second of losing
        it; never, for a hold that cannot be lost. Cancellable at once."""
        ...


@runtime_checkable
class SessionLocking(Protocol):
    """A store that keeps a session single-writer among every process sharing it.

    raf takes the lock of a session whose `store` has one for each top-level run, after the
    session object's own (in-process) writer: so two workers on one database never run one
    session at the same time. The lock is the process's: it goes when the process dies.

    Example:
        >>> async def run_alone(store: SessionLocking, session_id: str) -> bool:
        ...     lock = await store.lock_session(session_id, wait=False)
        ...     if lock is None:
        ...         return False  # another run of the session is in progress
        ...     await lock.release()
        ...     return True
    """

    async def lock_session(self, session_id: str, *, wait: bool) -> SessionLock | None:
        """Take `session_id` for one run: None when another run holds it and `wait` is False;
        with `wait`, wait until it is free (first come, first served within a process)."""
        ...


@runtime_checkable
class FencedSaves(Protocol):
    """A store whose checkpoint saves can be fenced: an expected-version save, which a stale
    writer (one whose session lock was lost) cannot make over a newer turn.

    Example:
        >>> async def save_turn(store: FencedSaves, read: str | None, new: Checkpoint) -> None:
        ...     await store.save_following(new, read)  # SessionConflict: another writer saved
    """

    async def save_following(self, checkpoint: Checkpoint, follows: str | None) -> None:
        """Store `checkpoint` when the newest checkpoint of its session is `follows` (None: the
        session has none), atomically.

        Raises:
            SessionConflict: another writer saved the session since `follows`; nothing was
                written.
            ValueError: `checkpoint.id` does not sort after `follows`.
            CheckpointVersionError: its `version` is not one this raf knows.
        """
        ...
