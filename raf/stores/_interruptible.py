"""Blocking database calls in worker threads that a cancelled caller interrupts, not waits out.

A worker thread cannot be cancelled, and abandoning it would leave its connection in use by a
thread nobody waits for. So `run_interruptible` tracks whether its call started:

- a call the caller gave up on before a worker thread took it (waiting for a thread, say) is
  marked skipped, never runs, and is never waited for;
- a call that started is interrupted (`sqlite3.Connection.interrupt()`, a PostgreSQL cancel
  request) and waited for, shielded, for at most `grace` seconds. Should it still run then, the
  caller stops waiting: `abandon()` runs at once (the owner stops handing out what the call
  holds), and `orphaned()` runs in the call's thread once the call ends (closing its
  connection, say).

Either way the cancellation is re-raised. The call rolls back what its transaction did on its
way out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Literal, TypeVar

import anyio
from anyio import to_thread

__all__ = ["GRACE_SECONDS", "Interrupted", "close_in_thread", "run_interruptible"]

T = TypeVar("T")

GRACE_SECONDS = 15.0
"""How long a cancelled caller waits for an interrupted call that started (a PostgreSQL cancel
request alone may take up to 10 s to give up on an unreachable server)."""


class Interrupted(Exception):
    """Raised in the worker thread when a call stops because its caller was cancelled."""


_State = Literal["waiting", "running", "skipped", "done", "orphaned"]


class _Call:
    """One call's progress, read and changed under `guard` by the caller and the thread."""

    __slots__ = ("done", "guard", "state")

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.state: _State = "waiting"
        self.done = threading.Event()  # set once the call ended (or will never start)

    def start(self) -> bool:
        """In the thread: whether to run the call (False once the caller skipped it)."""
        with self.guard:
            if self.state == "skipped":
                return False
            self.state = "running"
            return True

    def finish(self) -> bool:
        """In the thread, after the call: whether the caller abandoned it meanwhile."""
        with self.guard:
            orphaned = self.state == "orphaned"
            self.state = "done"
            self.done.set()
            return orphaned

    def skip(self) -> bool:
        """For the caller: skip the call unless it started; whether it started (and runs on)."""
        with self.guard:
            if self.state == "waiting":
                self.state = "skipped"
                self.done.set()
            return self.state == "running"

    def orphan(self) -> bool:
        """For the caller giving up: whether the call still runs (and is now orphaned)."""
        with self.guard:
            if self.state == "running":
                self.state = "orphaned"
                return True
            return False


async def run_interruptible(
    call: Callable[[], T],
    interrupt: Callable[[], object],
    *,
    abandon: Callable[[], object] | None = None,
    orphaned: Callable[[], object] | None = None,
    grace: float = GRACE_SECONDS,
) -> T:
    """Run `call()` in a worker thread; when cancelled, stop it (see the module docstring).

    `interrupt` runs in another worker thread (a PostgreSQL cancel request blocks briefly),
    must not raise, and may race with `call` returning on its own: it has to be harmless then.
    Whatever `call` returned or raised after an interrupt is dropped for the cancellation.
    `abandon` (in the caller's thread) and `orphaned` (in the call's thread) run only when the
    call outlives `grace`; neither may raise.

    Example:
        >>> import threading
        >>> started, stop = threading.Event(), threading.Event()
        >>> def call() -> bool:
        ...     started.set()
        ...     return stop.wait(60)
        >>> async def main() -> bool:
        ...     async with anyio.create_task_group() as tg:
        ...         tg.start_soon(run_interruptible, call, stop.set)
        ...         await to_thread.run_sync(started.wait)  # the call is running
        ...         tg.cancel_scope.cancel()
        ...     return stop.is_set()
        >>> anyio.run(main)
        True
    """
    progress = _Call()

    def tracked() -> T:
        if not progress.start():
            raise Interrupted("the call was cancelled before it started")
        try:
            return call()
        finally:
            if progress.finish() and orphaned is not None:
                orphaned()

    # The common case costs one worker-thread call; only a cancellation pays for the rest.
    try:
        return await to_thread.run_sync(tracked, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        if progress.skip():
            with anyio.CancelScope(shield=True):
                await _stop(progress, interrupt, grace)
            if progress.orphan() and abandon is not None:
                abandon()
        raise


async def _stop(progress: _Call, interrupt: Callable[[], object], grace: float) -> None:
    """Interrupt the running call and wait for it to end, for `grace` seconds in all."""
    # Own limiters: never queued behind the (possibly stuck) calls being stopped. A helper
    # thread cut off by the deadline returns by itself (the wait's own timeout bounds it).
    with anyio.move_on_after(grace):
        await to_thread.run_sync(
            interrupt, limiter=anyio.CapacityLimiter(1), abandon_on_cancel=True
        )
        await to_thread.run_sync(
            progress.done.wait, grace, limiter=anyio.CapacityLimiter(1), abandon_on_cancel=True
        )


async def close_in_thread(close: Callable[[], object]) -> None:
    """Run `close()` (a connection's) in a worker thread of its own, shielded: a close must
    happen even when its caller is cancelled, and must never queue behind worker threads
    that other calls keep busy (the default limiter's may all be taken)."""
    with anyio.CancelScope(shield=True):
        await to_thread.run_sync(close, limiter=anyio.CapacityLimiter(1))
