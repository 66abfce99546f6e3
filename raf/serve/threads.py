"""`Threads`: AG-UI threads as raf sessions, kept in a store's event log so they outlive the server.

A thread is one `Session` (its id is the thread id) plus the ids of the AG-UI messages it has
taken in or produced. Each save writes the session's state as a checkpoint of the session id
`thread:ID` (whose data the store cuts into parts kept once each, so a save writes only what
the turn added); its first save also writes an event of kind `raf.serve.thread` to the log,
by which threads are listed; opening a thread reads the newest such checkpoint (or, for a thread saved by an
earlier raf, the session JSON its newest event names). A run holds its thread (`Threads.hold`) through the store's session locks, loads it
then, and saves it before letting go: so several server workers on one database serve one
thread in turn, each from the state the one before saved, and a second run while one holds the
thread gets `SessionBusy`. Nothing of a thread stays in memory between runs.

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
from raf.errors import SessionBusy
from raf.session import Session
from raf.stores import Checkpoint, CheckpointStore, EventLog, StoredEvent, new_id
from raf.stores._session_locks import SessionLocks
from raf.stores.base import SessionLocking

__all__ = ["THREAD_EVENT", "Thread", "ThreadStore", "Threads", "check_thread_id"]

THREAD_EVENT = "raf.serve.thread"
"""Kind of the log events that hold a thread's saved state."""


@runtime_checkable
class ThreadStore(CheckpointStore, EventLog, Protocol):
    """A store that checkpoints runs and keeps an event log (every store of `raf.stores`)."""


class _State(BaseModel):
    """What one save of a thread keeps as its checkpoint's data."""

    model_config = ConfigDict(frozen=True)

    type: Literal["raf.serve.thread"] = "raf.serve.thread"
    version: Literal[2] = 2
    """Format version."""
    state: dict[str, Any]
    """`Session.snapshot()` of the thread's session."""
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


class Threads:
    """Opens, holds and saves threads in `store`.

    Args:
        store: where the sessions' JSON goes; also the checkpoint store of their runs, and
            what holds a thread for a run (`lock_session`, which every store of `raf.stores`
            has; a store without it holds threads within this process only).
    """

    def __init__(self, store: ThreadStore) -> None:
        self.store = store
        self._locks: SessionLocking = store if isinstance(store, SessionLocking) else SessionLocks()

    async def open(self, thread_id: str) -> Thread:
        """The thread `thread_id` as last saved (new when never saved), without holding it.

        Raises:
            ValueError: when the id is empty, or its saved state is not a thread's.
        """
        return await self._load(check_thread_id(thread_id))

    @asynccontextmanager
    async def hold(self, thread_id: str) -> AsyncGenerator[Thread]:
        """The thread `thread_id` as last saved, held until the block ends; save it in there.

        Raises:
            SessionBusy: another run holds the thread (in this process, or in another one
                sharing the store).
            ValueError: when the id is empty, or its saved state is not a thread's.
        """
        lock = await self._locks.lock_session(_key(check_thread_id(thread_id)), wait=False)
        if lock is None:
            raise SessionBusy(thread_id)
        try:
            yield await self._load(thread_id)
        finally:
            await lock.release()

    async def save(self, thread: Thread) -> None:
        """Write the thread's session and seen ids as its newest state."""
        async with thread.lock:
            saved = _State(
                state=thread.session.snapshot(),
                seen=sorted(thread.seen),
                runs=thread.runs,
                asked=thread.asked,
                said=thread.said,
                context=thread.context,
                shared=thread.shared,
            )
            checkpoint_id = new_id()
            await self.store.save(
                Checkpoint(
                    id=checkpoint_id,
                    session_id=_key(thread.id),
                    workflow_id=THREAD_EVENT,
                    superstep=0,
                    created_at=datetime.now(UTC),
                    data=saved.model_dump(mode="json"),
                )
            )
            if not thread.listed:
                await self.store.append(
                    StoredEvent(
                        id=new_id(),
                        occurred_at=datetime.now(UTC),
                        kind=THREAD_EVENT,
                        key=_key(thread.id),
                        meta={"checkpoint": checkpoint_id},
                    )
                )
                thread.listed = True

    async def _load(self, thread_id: str) -> Thread:
        checkpoint_id = await self.store.latest(_key(thread_id))
        if checkpoint_id is not None:
            checkpoint = await self.store.load(checkpoint_id)
            return self._thread(thread_id, _State.model_validate(checkpoint.data), listed=True)
        return await self._load_earlier(thread_id)

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
        saved = _State(state={}) if data is None else _saved(data)
        thread.session.restore(saved.state)
        thread.seen, thread.runs, thread.asked = set(saved.seen), saved.runs, dict(saved.asked)
        thread.said, thread.context = list(saved.said), list(saved.context)
        thread.shared = saved.shared

    def _thread(self, thread_id: str, saved: _State, *, listed: bool) -> Thread:
        session = Session(thread_id, store=self.store)
        session.restore(saved.state)
        return Thread(
            thread_id,
            session,
            set(saved.seen),
            listed=listed,
            runs=saved.runs,
            asked=dict(saved.asked),
            said=list(saved.said),
            context=list(saved.context),
            shared=saved.shared,
        )

    async def _load_earlier(self, thread_id: str) -> Thread:
        """A thread as an earlier raf saved it (its whole session JSON, named by its event)."""
        events = [e for e in await self.store.events(key=_key(thread_id)) if e.kind == THREAD_EVENT]
        if not events or events[-1].hash is None:
            return Thread(thread_id, Session(thread_id, store=self.store))
        raw = await self.store.get(events[-1].hash)
        saved = _Saved.model_validate_json(raw)
        session = Session.from_json(saved.session, store=self.store)
        return Thread(thread_id, session, set(saved.seen), listed=True)


def _saved(data: Mapping[str, Any]) -> _State:
    try:
        return _State.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"not a thread's saved state: {exc.errors()[0]['msg']}") from None


def check_thread_id(thread_id: str) -> str:
    """`thread_id`, when it can name a thread.

    Raises:
        ValueError: when it is empty.
    """
    if not thread_id:
        raise ValueError("threadId is empty: give each conversation a non-empty id")
    return thread_id


def _key(thread_id: str) -> str:
    return "thread:" + thread_id
