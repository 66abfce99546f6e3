"""Blocking database calls in worker threads that a cancelled caller interrupts, not waits out.

A worker thread cannot be cancelled, and abandoning it would leave its connection in use by a
thread nobody waits for. So `run_interruptible` keeps the thread but, when the awaiting task is
cancelled, asks the database to stop the statement (`sqlite3.Connection.interrupt()`, a
PostgreSQL cancel request), waits (shielded) for the thread to return, and then re-raises the
cancellation. The call rolls back what its transaction did on its way out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
from anyio import to_thread

__all__ = ["Interrupted", "run_interruptible"]

T = TypeVar("T")


class Interrupted(Exception):
    """Raised in the worker thread when a call stops because its caller was cancelled."""


async def run_interruptible(call: Callable[[], T], interrupt: Callable[[], object]) -> T:
    """Run `call()` in a worker thread; when cancelled, run `interrupt()` and wait for `call`.

    `interrupt` runs in another worker thread (a PostgreSQL cancel request blocks briefly),
    must not raise, and may race with `call` returning on its own: it has to be harmless then.
    Whatever `call` returned or raised after an interrupt is dropped for the cancellation.

    Example:
        >>> import threading
        >>> stop = threading.Event()
        >>> async def main() -> bool:
        ...     with anyio.move_on_after(0.01):
        ...         await run_interruptible(lambda: stop.wait(60), stop.set)
        ...     return stop.is_set()
        >>> anyio.run(main)
        True
    """
    done = threading.Event()

    def tracked() -> T:
        try:
            return call()
        finally:
            done.set()

    # The common case costs one worker-thread call; only a cancellation pays for the rest.
    try:
        return await to_thread.run_sync(tracked, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            if not done.is_set():
                # Own limiters: never queued behind the (possibly stuck) calls being stopped.
                await to_thread.run_sync(interrupt, limiter=anyio.CapacityLimiter(1))
                # The thread is waited for, never left running with its connection.
                await to_thread.run_sync(done.wait, limiter=anyio.CapacityLimiter(1))
        raise
