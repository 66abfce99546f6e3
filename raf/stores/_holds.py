"""`Hold`: a session's lock beyond this process, which can be lost; `Watch` finds out when.

A store's locks beyond the process stand on something that can go away without the holder's
doing: the connection a PostgreSQL advisory lock lives on, the lock file whose bytes a SQLite
store locks. The holds taken on one such thing share a `Generation`; when it goes, each of them
is lost at once, and none is ever taken again behind its holder's back (another worker may have
the session by then).

`Watch.wait` keeps one waiter of a store probing (every `interval`) while the others sleep until
it reports, so a store holding many sessions asks its server once per interval however many
runs watch. Nothing runs in the background: the probing runs in a waiter's own task, and passes
to another waiter when that one stops, so nothing outlives the waiters or the store.

Example:
    >>> import anyio
    >>> async def main() -> str:
    ...     generation = Generation()
    ...     async def unlock() -> None: ...
    ...     async def probe() -> None:
    ...         generation.lose("its connection dropped")
    ...     hold = Hold("chat-1", generation, unlock, Watch(probe, interval=0.01))
    ...     await hold.wait_lost()
    ...     try:
    ...         await hold.check()
    ...     except SessionLockLost as lost:
    ...         return lost.reason
    ...     return "held"
    >>> anyio.run(main)
    'its connection dropped'
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from raf.errors import SessionLockLost

__all__ = ["RELEASED", "Generation", "Hold", "Watch"]

RELEASED = "it was released"
"""Why a released hold is gone."""


class Generation:
    """The holds taken on one connection or one open lock file: lost together, for `lost`."""

    __slots__ = ("lost",)

    def __init__(self) -> None:
        self.lost: str | None = None
        """Why its holds are lost, once they are (set from worker threads, read anywhere)."""

    def lose(self, reason: str) -> None:
        """Mark every hold of this generation lost (the first reason stays)."""
        if self.lost is None:
            self.lost = reason


class Watch:
    """Finds lost holds of one store: `probe()` once, or `wait(gone)` probing every `interval`."""

    __slots__ = ("_interval", "_news", "_probe", "_waiters", "_watching")

    def __init__(self, probe: Callable[[], Awaitable[None]], *, interval: float) -> None:
        self._probe = probe
        self._interval = interval
        self._watching = False
        self._waiters = 0
        self._news: anyio.Event | None = None

    async def probe(self) -> None:
        """Look once whether the store's holds are still held (marking lost ones), and tell
        the waiters."""
        try:
            await self._probe()
        finally:
            self.announce()

    def announce(self) -> None:
        """Wake every waiter to look at its hold again (a hold was lost, released or closed)."""
        news, self._news = self._news, None
        if news is not None:
            news.set()

    async def wait(self, gone: Callable[[], bool]) -> None:
        """Return once `gone()`: as the store's one prober when none probes yet, else asleep
        until told."""
        self._waiters += 1
        try:
            while not gone():
                if self._watching:
                    await self._next_news()
                    continue
                self._watching = True
                try:
                    await self._probe_until(gone)
                finally:
                    self._watching = False
                    self.announce()  # so that another waiter takes the probing over
        finally:
            self._waiters -= 1
            if not self._waiters:
                self._news = None  # an event of this event loop, which the next may not be

    async def _probe_until(self, gone: Callable[[], bool]) -> None:
        due = anyio.current_time() + self._interval
        while not gone():
            with anyio.move_on_after(due - anyio.current_time()):
                await self._next_news()  # woken early when a hold goes another way
            if not gone() and anyio.current_time() >= due:
                await self.probe()
                due = anyio.current_time() + self._interval

    async def _next_news(self) -> None:
        if self._news is None:
            self._news = anyio.Event()
        await self._news.wait()


class Hold:
    """One session's lock beyond this process (a `SessionLock`), lost with its `generation`."""

    __slots__ = ("_released", "_unlock", "_watch", "generation", "session_id")

    def __init__(
        self,
        session_id: str,
        generation: Generation,
        unlock: Callable[[], Awaitable[None]],
        watch: Watch,
    ) -> None:
        self.session_id = session_id
        self.generation = generation
        self._unlock = unlock
        self._watch = watch
        self._released = False

    def gone(self) -> str | None:
        """Why the hold is gone (lost or released), or None while it holds, as far as known."""
        return RELEASED if self._released else self.generation.lost

    async def release(self) -> None:
        """Let the session go (a lost lock went already); idempotent."""
        if self._released:
            return
        self._released = True
        try:
            if self.generation.lost is None:
                with anyio.CancelScope(shield=True):
                    await self._unlock()
        finally:
            self._watch.announce()

    async def check(self) -> None:
        """Raise `SessionLockLost` when the hold is gone; probe the store once when not known."""
        if self.gone() is None:
            await self._watch.probe()
        reason = self.gone()
        if reason is not None:
            raise SessionLockLost(self.session_id, reason)

    async def wait_lost(self) -> None:
        """Return once the hold is gone."""
        await self._watch.wait(lambda: self.gone() is not None)
