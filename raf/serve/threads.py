"""`Threads`: AG-UI threads as raf sessions, kept in a store's event log so they outlive the server.

A thread is one `Session` (its id is the thread id) plus the ids of the AG-UI messages it has
taken in or produced. Each save appends the session's JSON (`Session.to_json()`) to the store's
content store and an event of kind `raf.serve.thread` to its log; opening a thread reads the
newest. Live threads stay in memory, one `Session` object each, so two runs on one thread meet
the session's single-writer rule (`SessionBusy`).

Example:
    >>> import anyio
    >>> from raf.stores import MemoryCheckpointStore
    >>> async def main() -> list[str]:
    ...     store = MemoryCheckpointStore()
    ...     thread = await Threads(store).open("t1")
    ...     thread.session.set("k", 1)
    ...     thread.seen.add("m1")
    ...     await Threads(store).save(thread)
    ...     reopened = await Threads(store).open("t1")
    ...     return [str(reopened.session.get("k")), *reopened.seen]
    >>> anyio.run(main)
    ['1', 'm1']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol, runtime_checkable

import anyio
from pydantic import BaseModel, ConfigDict, Field

from raf.session import Session
from raf.stores import CheckpointStore, EventLog, StoredEvent, new_id

__all__ = ["THREAD_EVENT", "Thread", "ThreadStore", "Threads"]

THREAD_EVENT = "raf.serve.thread"
"""Kind of the log events that hold a thread's saved state."""


@runtime_checkable
class ThreadStore(CheckpointStore, EventLog, Protocol):
    """A store that checkpoints runs and keeps an event log (every store of `raf.stores`)."""


class _Saved(BaseModel):
    """What one save of a thread writes to the content store."""

    model_config = ConfigDict(frozen=True)

    type: Literal["raf.serve.thread"] = "raf.serve.thread"
    version: Literal[1] = 1
    """Format version."""
    session: str
    """`Session.to_json()` of the thread's session."""
    seen: list[str] = Field(default_factory=lambda: list[str]())
    """AG-UI message ids the thread has taken in or produced."""


@dataclass(slots=True)
class Thread:
    """One AG-UI thread: its raf session and the message ids it has seen."""

    id: str
    session: Session
    seen: set[str] = field(default_factory=lambda: set[str]())
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    """Held while the thread is saved, so saves land in order."""


class Threads:
    """Opens and saves threads in `store`; opened threads stay live in memory.

    Args:
        store: where the sessions' JSON goes; also the checkpoint store of their runs.
    """

    def __init__(self, store: ThreadStore) -> None:
        self.store = store
        self._live: dict[str, Thread] = {}
        # Made on first use, on the loop that serves: an app may be built on another one.
        self._opening: anyio.Lock | None = None

    async def open(self, thread_id: str) -> Thread:
        """The live thread `thread_id`, loaded from the store or new.

        Raises:
            ValueError: when the id is empty, or its saved state is not a thread's.
        """
        if not thread_id:
            raise ValueError("threadId is empty: give each conversation a non-empty id")
        live = self._live.get(thread_id)
        if live is not None:
            return live
        if self._opening is None:
            self._opening = anyio.Lock()
        async with self._opening:
            live = self._live.get(thread_id)
            if live is None:
                live = await self._load(thread_id)
                self._live[thread_id] = live
        return live

    async def save(self, thread: Thread) -> None:
        """Write the thread's session and seen ids as its newest state."""
        async with thread.lock:
            saved = _Saved(session=thread.session.to_json(), seen=sorted(thread.seen))
            digest = await self.store.put(saved.model_dump_json().encode())
            await self.store.append(
                StoredEvent(
                    id=new_id(),
                    occurred_at=datetime.now(UTC),
                    kind=THREAD_EVENT,
                    key=_key(thread.id),
                    hash=digest,
                )
            )

    async def _load(self, thread_id: str) -> Thread:
        events = [e for e in await self.store.events(key=_key(thread_id)) if e.kind == THREAD_EVENT]
        if not events or events[-1].hash is None:
            return Thread(thread_id, Session(thread_id, store=self.store))
        raw = await self.store.get(events[-1].hash)
        saved = _Saved.model_validate_json(raw)
        session = Session.from_json(saved.session, store=self.store)
        return Thread(thread_id, session, set(saved.seen))


def _key(thread_id: str) -> str:
    return "thread:" + thread_id
