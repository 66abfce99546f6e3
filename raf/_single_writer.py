"""One top-level run at a time per session, later ones rejected or queued.

`SessionWriter`: each `Session` owns one. A run claims it before its first item and releases it
when its body ends; a run that waits (`RunOptions(on_busy="wait")`) queues first come, first
served, and the writer passes straight from one run to the next, so no third run can slip in
between. `claim_session` (and `holding`, its context manager) adds the lock of the session's store, when it has one
(`raf.stores.base.SessionLocking`), which holds the session among every process sharing it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio

from raf._streaming import Release
from raf.errors import SessionBusy

if TYPE_CHECKING:
    from raf.session import Session
    from raf.stores.base import SessionLock
    from raf.updates import AgentPath

    LockSession = Callable[..., Awaitable[SessionLock | None]]

__all__ = ["Acquire", "OnBusy", "Release", "SessionWriter", "claim_session", "hold", "holding"]

OnBusy = Literal["reject", "wait"]
"""What a run does when another run of its session is in progress: raise `SessionBusy`, or
queue behind it."""

Acquire = Callable[[], Awaitable[Release | None]]
"""Takes a hold beyond a session's writer: how to let it go, or None when another holds it."""


class SessionWriter:
    """Who may run on a session now, and who waits for it, in arrival order."""

    __slots__ = ("_busy", "_queue")

    def __init__(self) -> None:
        self._busy = False
        self._queue: deque[anyio.Event] = deque()

    @property
    def busy(self) -> bool:
        """True while a run holds the session."""
        return self._busy

    def try_claim(self) -> bool:
        """Take the session if it is free; False when another run holds it."""
        if self._busy:
            return False
        self._busy = True
        return True

    async def claim(self) -> None:
        """Take the session, waiting behind the runs that hold it or queued first."""
        if not self._busy:
            self._busy = True
            return
        turn = anyio.Event()
        self._queue.append(turn)
        try:
            await turn.wait()
        except BaseException:
            if turn.is_set():
                # The session was handed over just as this wait was cancelled: pass it on.
                self.release()
            else:
                self._queue.remove(turn)
            raise

    def release(self) -> None:
        """Give the session to the next queued run, or free it."""
        if self._queue:
            self._queue.popleft().set()
        else:
            self._busy = False


async def claim_session(session: Session, *, wait: bool, path: AgentPath = ()) -> Release:
    """Hold `session` for one top-level run: its own writer, then its store's lock, if any.

    Raises:
        SessionBusy: another run holds the session (in this process, or in another one
            sharing its store) and `wait` is False. With `wait`, the run waits its turn.
    """
    store = session.store
    lock_session = None if store is None else getattr(store, "lock_session", None)
    then = None if lock_session is None else _store_lock(lock_session, session, wait)
    release = await hold(session.writer, wait=wait, then=then)
    if release is None:
        raise SessionBusy(session.id, path=path)
    if store is None:
        return release
    try:
        # Held: the newest state another process saved is the one this run continues.
        await session.refresh()
    except BaseException:
        await release()
        raise
    return release


@asynccontextmanager
async def holding(session: Session, *, wait: bool, path: AgentPath = ()) -> AsyncGenerator[None]:
    """`claim_session` for the block: the session is let go however the block ends."""
    release = await claim_session(session, wait=wait, path=path)
    try:
        yield
    finally:
        await release()


async def hold(
    writer: SessionWriter,
    *,
    wait: bool,
    then: Acquire | None = None,
    freed: Callable[[], None] | None = None,
) -> Release | None:
    """Claim `writer` (waiting its turn with `wait`), then what `then` takes: how to let both
    go, or None when either is held by another run (and `wait` is False).

    `freed` gives the writer back (its `release` by default); the release lets `then`'s hold
    go first, shielded from cancellation.
    """
    give_back = writer.release if freed is None else freed
    if wait:
        await writer.claim()
    elif not writer.try_claim():
        return None
    if then is None:

        async def release_writer() -> None:
            give_back()

        return release_writer
    try:
        outer = await then()
    except BaseException:
        give_back()
        raise
    if outer is None:
        give_back()
        return None

    async def release() -> None:
        try:
            with anyio.CancelScope(shield=True):
                await outer()
        finally:
            give_back()

    return release


def _store_lock(lock_session: Any, session: Session, wait: bool) -> Acquire:
    """What `hold` takes after the writer: the store's lock of `session`, kept as
    `session.held` until it is released."""

    async def acquire() -> Release | None:
        lock = await cast("LockSession", lock_session)(session.id, wait=wait)
        if lock is None:
            return None
        session.held = lock

        async def release() -> None:
            if session.held is lock:
                session.held = None
            await lock.release()

        return release

    return acquire
