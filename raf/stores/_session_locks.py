"""`SessionLocks`: the sessions one store object lets run, in this process and beyond it.

Every store keeps a table of the session ids its runs hold in this process, with a first come,
first served queue per id (a `SessionWriter` each), so two `Session` objects with one id and
one store never run at once. A store shared between processes adds its own lock behind it
(`Beyond`: a PostgreSQL advisory lock, an OS lock on a file next to the SQLite database),
taken only by the run that holds the id here, so a process asks for each session once at a
time.

Example:
    >>> import anyio
    >>> async def main() -> tuple[bool, bool]:
    ...     locks = SessionLocks()
    ...     first = await locks.lock_session("chat-1", wait=False)
    ...     second = await locks.lock_session("chat-1", wait=False)
    ...     assert first is not None
    ...     await first.release()
    ...     return second is None, await locks.lock_session("chat-1", wait=False) is not None
    >>> anyio.run(main)
    (True, True)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

import anyio

from raf._single_writer import SessionWriter, hold
from raf._streaming import Release
from raf.errors import SessionLockLost
from raf.stores._holds import RELEASED
from raf.stores.base import SessionLock

__all__ = ["Beyond", "Release", "SessionLockingStore", "SessionLocks", "taken"]

Beyond = Callable[[str, bool], Awaitable[SessionLock | None]]
"""Takes the lock of a session id beyond this process (waiting when told to): the hold, or
None when another process holds it."""


_FIRST_PAUSE_SECONDS = 0.005
_LONGEST_PAUSE_SECONDS = 0.1


async def taken(attempt: Callable[[], Awaitable[bool]], *, wait: bool) -> bool:
    """Whether `attempt()` took a lock held elsewhere: once, or with `wait` again after a pause
    that grows from 5 ms to 100 ms until it does (for locks no one can wait on directly)."""
    pause = _FIRST_PAUSE_SECONDS
    while not await attempt():
        if not wait:
            return False
        await anyio.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE_SECONDS)
    return True


class SessionLocks:
    """The session ids held through one store, in this process, then (with `beyond`) elsewhere."""

    __slots__ = ("_beyond", "_writers")

    def __init__(self, beyond: Beyond | None = None) -> None:
        self._writers: dict[str, SessionWriter] = {}
        self._beyond = beyond

    async def lock_session(self, session_id: str, *, wait: bool) -> SessionLock | None:
        """Hold `session_id` for one run; see `raf.stores.base.SessionLocking`."""
        writer = self._writers.get(session_id)
        if writer is None:
            writer = self._writers[session_id] = SessionWriter()
        beyond = self._beyond
        outer: list[SessionLock] = []
        then = None if beyond is None else partial(_take, beyond, session_id, wait, outer)
        try:
            release = await hold(
                writer, wait=wait, then=then, freed=partial(self._give_back, session_id, writer)
            )
        finally:
            self._forget_if_free(session_id, writer)
        return None if release is None else _Held(session_id, release, outer[0] if outer else None)

    def _give_back(self, session_id: str, writer: SessionWriter) -> None:
        writer.release()
        self._forget_if_free(session_id, writer)

    def _forget_if_free(self, session_id: str, writer: SessionWriter) -> None:
        if not writer.busy and self._writers.get(session_id) is writer:
            del self._writers[session_id]


async def _take(
    beyond: Beyond, session_id: str, wait: bool, taken: list[SessionLock]
) -> Release | None:
    """Take `session_id` `beyond` the process, adding the hold to `taken`: how to release it."""
    lock = await beyond(session_id, wait)
    if lock is None:
        return None
    taken.append(lock)
    return lock.release


class _Held:
    """A run's hold on a session id, let go once however often `release` is called; lost
    when its hold `beyond` the process is (never, without one)."""

    __slots__ = ("_beyond", "_release", "_released", "_session_id")

    def __init__(
        self, session_id: str, release: Release, beyond: SessionLock | None = None
    ) -> None:
        self._session_id = session_id
        self._release: Release | None = release
        self._beyond = beyond
        self._released = anyio.Event()

    async def release(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            try:
                await release()
            finally:
                self._released.set()

    @property
    def can_be_lost(self) -> bool:
        """Whether anything but its release can end the hold (a hold beyond the process)."""
        return self._beyond is not None

    async def check(self) -> None:
        if self._release is None:
            raise SessionLockLost(self._session_id, RELEASED)
        if self._beyond is not None:
            await self._beyond.check()

    async def wait_lost(self) -> None:
        if self._beyond is None:
            await self._released.wait()
        else:
            await self._beyond.wait_lost()  # which returns once released, too


class SessionLockingStore:
    """What a store mixes in to keep its sessions single-writer: `lock_session`, answered by
    the `SessionLocks` it sets up as `_session_locks`."""

    __slots__ = ()

    _session_locks: SessionLocks

    async def lock_session(self, session_id: str, *, wait: bool) -> SessionLock | None:
        """Hold `session_id` for one run: None when another run holds it and `wait` is False;
        with `wait`, wait for it (see `raf.stores.base.SessionLocking`)."""
        return await self._session_locks.lock_session(session_id, wait=wait)
