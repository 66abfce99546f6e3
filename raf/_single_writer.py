"""One top-level run at a time per session, later ones rejected or queued.

`SessionWriter`: each `Session` owns one. A run claims it before its first item and releases it
when its body ends; a run that waits (`RunOptions(on_busy="wait")`) queues first come, first
served, and the writer passes straight from one run to the next, so no third run can slip in
between. `claim_session` adds the lock of the session's store, when it has one
(`raf.stores.base.SessionLocking`), which holds the session among every process sharing it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, cast

import anyio

from raf._streaming import Release
from raf.errors import SessionBusy

if TYPE_CHECKING:
    from raf.session import Session
    from raf.stores.base import SessionLock
    from raf.updates import AgentPath

    LockSession = Callable[..., Awaitable[SessionLock | None]]

__all__ = ["Release", "SessionWriter", "claim_session"]


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
    writer = session.writer
    if wait:
        await writer.claim()
    elif not writer.try_claim():
        raise SessionBusy(session.id, path=path)
    store = session.store
    lock_session = None if store is None else getattr(store, "lock_session", None)
    if lock_session is None:
        return _releasing(writer)
    lock_session = cast("LockSession", lock_session)
    try:
        lock = await lock_session(session.id, wait=wait)
    except BaseException:
        writer.release()
        raise
    if lock is None:
        writer.release()
        raise SessionBusy(session.id, path=path)
    release_lock = lock.release

    async def release() -> None:
        try:
            with anyio.CancelScope(shield=True):
                await release_lock()
        finally:
            writer.release()

    return release


def _releasing(writer: SessionWriter) -> Release:
    async def release() -> None:
        writer.release()

    return release
