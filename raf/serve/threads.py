"""`Threads`: AG-UI threads as store-backed raf sessions, so they outlive the server.

A thread is one `Session` (its id is the thread id) with a store: opening a thread loads the
session's newest saved state, and each save is the session's own fenced save (`Session.save`,
whose records the store cuts into parts kept once each, so a save writes only what the turn
added). Beside the conversation, the session keeps under `THREAD_KEY` what the AG-UI front
needs of the thread: the ids of the AG-UI messages it has taken in or produced, its runs, the
ids its clients know its open requests by, and the client's context and shared state. Its
first save also writes an event of kind `raf.serve.thread` to the log (under
`listing_key(id)`), by which threads are listed. A run holds its thread (`Threads.hold`)
through the store's session locks, loads it then, and saves it before letting go: so several
server workers on one database serve one thread in turn, each from the state the one before
saved, and a second run while one holds the thread gets `SessionBusy`. Nothing of a thread
stays in memory between runs. Threads an earlier raf saved (under `thread:ID`) still open.

Example:
    >>> import anyio
    >>> from raf.stores import MemoryCheckpointStore
    >>> async def main() -> list[str]:
    ...     store = MemoryCheckpointStore()
    ...     async with Threads(store).hold("t1") as thread:
    ...         thread.session.set("k", 1)
    ...         thread.seen.add("m1")
    ...         await Threads(store).save(thread)
    ...     reopened = await Threads(store).open("t1")
    ...     return [str(reopened.session.get("k")), *reopened.seen]
    >>> anyio.run(main)
    ['1', 'm1']
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, runtime_checkable

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raf._defaults import new_dict, new_list, new_set
from raf._session_records import RECORD_KIND, RESERVED_PREFIX, SessionRecord, record_key
from raf.errors import SessionBusy
from raf.session import Session, checked_id
from raf.stores import Checkpoint, CheckpointStore, EventLog, StoredEvent, new_id
from raf.stores._session_locks import SessionLocks
from raf.stores.base import SessionLock, SessionLocking

__all__ = [
    "THREAD_EVENT",
    "THREAD_KEY",
    "TURN_KINDS",
    "Thread",
    "ThreadStore",
    "Threads",
    "check_thread_id",
    "is_turn",
    "listing_key",
    "thread_of",
    "turn_keys",
]

THREAD_EVENT = "raf.serve.thread"
"""Kind of the log event that lists a thread (and of a thread's save by an earlier raf)."""

THREAD_KEY = "#agui"
"""The session key of what the AG-UI front keeps of a thread beside its conversation."""

TURN_KINDS = frozenset({RECORD_KIND, THREAD_EVENT})
"""The `workflow_id`s of a thread's saved turns: session records (and earlier threads' saves)."""

_LISTING_PREFIX = RESERVED_PREFIX + "thread:"
_LEGACY_PREFIX = "thread:"


@runtime_checkable
class ThreadStore(CheckpointStore, EventLog, Protocol):
    """A store that checkpoints runs and keeps an event log (every store of `raf.stores`)."""


class _Facts(BaseModel):
    """What the AG-UI front keeps of a thread in its session (under `THREAD_KEY`)."""

    model_config = ConfigDict(frozen=True)

    seen: list[str] = Field(default_factory=new_list)
    """AG-UI message ids the thread has taken in or produced."""
    runs: int = 0
    """Runs started on the thread."""
    asked: dict[str, str] = Field(default_factory=new_dict)
    """The open requests: raf request id to the id the client knows it by."""
    said: list[str] = Field(default_factory=new_list)
    """Messages (JSON) the client was sent in the earlier runs of a turn still waiting."""
    context: list[str] = Field(default_factory=new_list)
    """The client context the thread took in last (AG-UI `context`, one JSON entry each)."""
    shared: Any = None
    """The shared state the thread took in last (AG-UI `state`), None before any."""


class _State(_Facts):
    """What one save of a thread kept as its checkpoint's data, before threads were sessions:
    the thread's facts beside its session's state."""

    model_config = ConfigDict(frozen=True)

    type: Literal["raf.serve.thread"] = "raf.serve.thread"
    version: Literal[2] = 2
    """Format version."""
    state: dict[str, Any]
    """`Session.snapshot()` of the thread's session."""


class _Saved(BaseModel):
    """What one save of a thread wrote to the content store, before threads were checkpoints."""

    model_config = ConfigDict(frozen=True)

    type: Literal["raf.serve.thread"] = "raf.serve.thread"
    version: Literal[1] = 1
    """Format version."""
    session: str
    """`Session.to_json()` of the thread's session."""
    seen: list[str] = Field(default_factory=new_list)
    """AG-UI message ids the thread has taken in or produced."""


@dataclass(slots=True)
class Thread:
    """One AG-UI thread: its raf session and the message ids it has seen."""

    id: str
    session: Session
    seen: set[str] = field(default_factory=new_set)
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    """Held while the thread is saved, so saves land in order."""
    listed: bool = False
    """Whether the store's log has the thread's event (written by its first save)."""
    runs: int = 0
    """Runs started on the thread: the turn number in the ids of the requests it asks."""
    asked: dict[str, str] = field(default_factory=new_dict)
    """The open requests: raf request id to the id the client knows it by (unique in the
    thread, since raf's ids repeat from turn to turn)."""
    said: list[str] = field(default_factory=new_list)
    """Messages (JSON) the client was sent in the earlier runs of a turn still waiting, which
    the turn's response carries again."""
    context: list[str] = field(default_factory=new_list)
    """The client context the thread took in last (one JSON entry each)."""
    shared: Any = None
    """The shared state (AG-UI `state`) the thread took in last, None before any."""
    hold: SessionLock | None = None
    """The store's lock on the thread while `Threads.hold` holds it."""


class Threads:
    """Opens, holds and saves threads in `store`.

    Args:
        store: where the threads' sessions are kept; also the checkpoint store of their
            runs, and what holds a thread for a run (`lock_session`, which every store of
            `raf.stores` has; a store without it holds threads within this process only).
    """

    def __init__(self, store: ThreadStore) -> None:
        self.store = store
        self._locks: SessionLocking = store if isinstance(store, SessionLocking) else SessionLocks()

    async def open(self, thread_id: str) -> Thread:
        """The thread `thread_id` as last saved (new when never saved), without holding it.

        Raises:
            ValueError: when the id cannot name a thread, or its saved state is not a thread's.
        """
        return await self._load(check_thread_id(thread_id))

    @asynccontextmanager
    async def hold(self, thread_id: str) -> AsyncGenerator[Thread]:
        """The thread `thread_id` as last saved, held until the block ends; save it in there.

        Raises:
            SessionBusy: another run holds the thread (in this process, or in another one
                sharing the store).
            ValueError: when the id cannot name a thread, or its saved state is not a thread's.
        """
        key = listing_key(check_thread_id(thread_id))
        lock = await self._locks.lock_session(key, wait=False)
        if lock is None:
            raise SessionBusy(thread_id)
        try:
            thread = await self._load(thread_id)
            thread.hold = lock
            yield thread
        finally:
            await lock.release()

    async def save(self, thread: Thread) -> None:
        """Write the thread's session, with what the thread keeps beside it, as its newest
        state (a fenced save of the session: see `Session.save`).

        Raises:
            SessionLockLost: the thread's lock was lost (nothing written).
            SessionConflict: another process saved the thread since it was loaded.
        """
        async with thread.lock:
            check = getattr(thread.hold, "check", None)
            if check is not None:  # a thread whose lock was lost writes nothing
                await check()
            thread.session.set(THREAD_KEY, _facts(thread).model_dump(mode="json"))
            await thread.session.save()
            if not thread.listed:
                await self.store.append(
                    StoredEvent(
                        id=new_id(),
                        occurred_at=datetime.now(UTC),
                        kind=THREAD_EVENT,
                        key=listing_key(thread.id),
                        meta={"checkpoint": thread.session.saved},
                    )
                )
                thread.listed = True

    async def _load(self, thread_id: str) -> Thread:
        session = Session(thread_id, store=self.store)
        session.save_turns = False  # `save` writes each turn, with the thread's facts
        await session.load()
        if session.saved is not None:
            facts = _Facts.model_validate(session.get(THREAD_KEY) or {})
            return _thread(thread_id, session, facts, listed=True)
        return await self._load_earlier(thread_id, session)

    async def fork(self, thread_id: str, data: Mapping[str, Any]) -> None:
        """Start the new thread `thread_id` as a copy of a thread's saved checkpoint `data`.

        Raises:
            ValueError: when `data` is not a thread's saved state.
        """
        _saved(data)  # refused before the thread is held
        async with self.hold(thread_id) as thread:
            self.carry(thread, data)
            await self.save(thread)

    @staticmethod
    def carry(thread: Thread, data: Mapping[str, Any] | None) -> None:
        """Make `thread` (held, not saved) the thread a saved checkpoint `data` holds: its
        session, the ids it has seen, its runs, its open requests, its context and shared
        state (`None`: a new thread's).

        Raises:
            ValueError: when `data` is not a thread's saved state.
        """
        state, facts = ({}, _Facts()) if data is None else _saved(data)
        thread.session.restore(state)
        thread.seen, thread.runs, thread.asked = set(facts.seen), facts.runs, dict(facts.asked)
        thread.said, thread.context = list(facts.said), list(facts.context)
        thread.shared = facts.shared

    async def _load_earlier(self, thread_id: str, session: Session) -> Thread:
        """A thread as an earlier raf saved it (a checkpoint of `thread:ID`, or before that
        its whole session JSON, named by its event), else a new thread."""
        checkpoint_id = await self.store.latest(_LEGACY_PREFIX + thread_id)
        if checkpoint_id is not None:
            checkpoint = await self.store.load(checkpoint_id)
            # Only a thread's own save: a session named `thread:ID` files its runs there too.
            if checkpoint.workflow_id == THREAD_EVENT:
                state, facts = _saved(checkpoint.data)
                session.restore(state)
                return _thread(thread_id, session, facts, listed=True)
        events = [
            e
            for e in await self.store.events(key=_LEGACY_PREFIX + thread_id)
            if e.kind == THREAD_EVENT
        ]
        if not events or events[-1].hash is None:
            return Thread(thread_id, session)
        raw = await self.store.get(events[-1].hash)
        saved = _Saved.model_validate_json(raw)
        session.restore(Session.from_json(saved.session).snapshot())
        return Thread(thread_id, session, set(saved.seen), listed=True)


def _thread(thread_id: str, session: Session, facts: _Facts, *, listed: bool) -> Thread:
    return Thread(
        thread_id,
        session,
        set(facts.seen),
        listed=listed,
        runs=facts.runs,
        asked=dict(facts.asked),
        said=list(facts.said),
        context=list(facts.context),
        shared=facts.shared,
    )


def _facts(thread: Thread) -> _Facts:
    return _Facts(
        seen=sorted(thread.seen),
        runs=thread.runs,
        asked=thread.asked,
        said=thread.said,
        context=thread.context,
        shared=thread.shared,
    )


def _saved(data: Mapping[str, Any]) -> tuple[dict[str, Any], _Facts]:
    """The session state and the thread's facts a turn's saved checkpoint `data` holds (a
    session record, or a thread's save of an earlier raf)."""
    try:
        if data.get("type") == RECORD_KIND:
            state = dict(SessionRecord.model_validate(data).state)
            return state, _Facts.model_validate(state.get(THREAD_KEY) or {})
        old = _State.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"not a thread's saved state: {exc.errors()[0]['msg']}") from None
    return dict(old.state), old


def check_thread_id(thread_id: str) -> str:
    """`thread_id`, when it can name a thread: as a session id (see `Session`), and printable.

    Raises:
        ValueError: saying what is wrong with it.
    """
    if not thread_id:
        raise ValueError("threadId is empty: give each conversation a non-empty id")
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in thread_id):
        raise ValueError(
            f"threadId {thread_id[:40]!r} holds a control character: use printable characters"
        )
    checked_id(thread_id)
    return thread_id


def listing_key(thread_id: str) -> str:
    """The log key of thread `thread_id`'s events (its listing, its fork's origin)."""
    return _LISTING_PREFIX + thread_id


def thread_of(key: str) -> str | None:
    """The thread whose events are filed under the log key `key` (as `listing_key` makes it,
    or as an earlier raf did), or None."""
    for prefix in (_LISTING_PREFIX, _LEGACY_PREFIX):
        if key.startswith(prefix):
            return key.removeprefix(prefix)
    return None


def turn_keys(thread_id: str) -> tuple[str, str]:
    """The checkpoint keys a thread's turns are saved under: its session's records, and where
    an earlier raf saved them (whose checkpoints are a thread's only when their
    `workflow_id` is in `TURN_KINDS`)."""
    return record_key(thread_id), _LEGACY_PREFIX + thread_id


def is_turn(checkpoint: Checkpoint) -> bool:
    """Whether `checkpoint` is a thread's saved turn (not a step of a workflow run)."""
    return checkpoint.workflow_id in TURN_KINDS
