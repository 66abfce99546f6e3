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
from raf.stores.base import SessionLock

__all__ = ["Beyond", "Release", "SessionLockingStore", "SessionLocks", "taken"]

Beyond = Callable[[str, bool], Awaitable[Release | None]]
"""Takes the lock of a session id beyond this process (waiting when told to): how to release
it, or None when another process holds it."""


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
        then = None if beyond is None else partial(beyond, session_id, wait)
        try:
            release = await hold(
                writer, wait=wait, then=then, freed=partial(self._give_back, session_id, writer)
            )
        finally:
            self._forget_if_free(session_id, writer)
        return None if release is None else _Held(release)

    def _give_back(self, session_id: str, writer: SessionWriter) -> None:
        writer.release()
        self._forget_if_free(session_id, writer)

    def _forget_if_free(self, session_id: str, writer: SessionWriter) -> None:
        if not writer.busy and self._writers.get(session_id) is writer:
            del self._writers[session_id]


class _Held:
    """A run's hold on a session id, let go once however often `release` is called."""

    __slots__ = ("_release",)

    def __init__(self, release: Release) -> None:
        self._release: Release | None = release

    async def release(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            await release()


class SessionLockingStore:
    """What a store mixes in to keep its sessions single-writer: `lock_session`, answered by
    the `SessionLocks` it sets up as `_session_locks`."""

    __slots__ = ()

    _session_locks: SessionLocks

    async def lock_session(self, session_id: str, *, wait: bool) -> SessionLock | None:
        """Hold `session_id` for one run: None when another run holds it and `wait` is False;
        with `wait`, wait for it (see `raf.stores.base.SessionLocking`)."""
        return await self._session_locks.lock_session(session_id, wait=wait)
