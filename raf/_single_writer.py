"""`SessionWriter`: one top-level run at a time per session, later ones rejected or queued.

Each `Session` owns one. A run claims it before its first item and releases it when its body
ends; a run that waits (`RunOptions(on_busy="wait")`) queues first come, first served, and the
writer passes straight from one run to the next, so no third run can slip in between.
"""

from __future__ import annotations

from collections import deque

import anyio

__all__ = ["SessionWriter"]


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
