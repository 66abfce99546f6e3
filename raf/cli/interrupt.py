"""Ctrl-C cancels a command's work at once, and abandoned worker threads never hold the process.

A sync tool runs in a worker thread that cannot be stopped: cancelling the run abandons it, but
the interpreter would still join it at exit (anyio's worker threads are not daemons), keeping the
process alive until the tool returns. `exit_now` ends the process without that join once output
is flushed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import NoReturn

import anyio

EXIT_INTERRUPTED = 130
"""The exit status after Ctrl-C (128 + SIGINT), as shells report it."""

_JOIN_GRACE = 0.2
"""Seconds granted to worker threads that are about to finish anyway."""


async def until_interrupted(body: Callable[[], Awaitable[int]]) -> int:
    """Run `body`, cancelling it on SIGINT; return its exit status, or 130 when interrupted.

    Raises:
        Exception: what `body` raised, as itself (not in an exception group).
    """
    status = EXIT_INTERRUPTED
    error: Exception | None = None
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async with anyio.create_task_group() as tg:

            async def cancel_on_signal() -> None:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

            async def work() -> None:
                nonlocal status, error
                try:
                    status = await body()
                except Exception as exc:
                    error = exc
                tg.cancel_scope.cancel()

            tg.start_soon(cancel_on_signal)
            tg.start_soon(work)
    if error is not None:
        raise error
    return status


def exit_now(status: int) -> NoReturn:
    """Exit with `status` after flushing output, without waiting for abandoned threads."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed, or its reader went away
            stream.flush()
    if _threads_still_busy():
        os._exit(status)
    sys.exit(status)


def _threads_still_busy() -> bool:
    deadline = time.monotonic() + _JOIN_GRACE
    for thread in threading.enumerate():
        if thread is threading.main_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            return True
    return False
