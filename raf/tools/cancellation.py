"""Cancellation seen from a sync tool's worker thread: write only while the call is live.

A sync tool runs in a worker thread that anyio abandons when the run is cancelled; the thread
itself cannot be stopped. `Tool.call` hands the thread a `CallFlag` and sets it when the call
is cancelled, and tools with side effects call `check_not_cancelled()` right before each
one, so an abandoned thread stops at its next write instead of changing files after the
run has ended.

Example:
    >>> check_not_cancelled()  # outside a cancelled tool call: nothing happens
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar

from raf.errors import ToolError

__all__ = ["CallFlag", "check_not_cancelled", "running_call"]


class CallFlag:
    """Set once the tool call it belongs to is cancelled; read from the worker thread."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False
        """Whether the call was cancelled (one attribute write: safe to read from any thread)."""

    def cancel(self) -> None:
        """Mark the call cancelled."""
        self.cancelled = True


# A context variable, not a global: each tool call (and the worker thread anyio runs it in,
# which gets a copy of the caller's context) sees its own flag.
_flag: ContextVar[CallFlag | None] = ContextVar("raf_tool_call_flag", default=None)


@contextmanager
def running_call(flag: CallFlag) -> Generator[None]:
    """Make `flag` the flag of the tool call run in this context."""
    token = _flag.set(flag)
    try:
        yield
    finally:
        _flag.reset(token)


def check_not_cancelled() -> None:
    """Raise `ToolError` when the tool call running in this thread was cancelled.

    Call it right before a side effect (a write, a rename) in a sync tool.
    """
    flag = _flag.get()
    if flag is not None and flag.cancelled:
        raise ToolError("the tool call was cancelled; nothing was written")
