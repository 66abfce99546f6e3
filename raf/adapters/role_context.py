"""Where a role's adapter streams: the run context of the role being played, if any.

A role workflow sets it around each role call, so an adapter that streams (the ReAct adapter,
an agent's adapter) sends its tokens and tool calls to the run, attributed to the role's path;
called outside a role workflow, an adapter streams nowhere.

Example:
    >>> role_context() is None
    True
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar

from raf.run import RunContext

__all__ = ["playing_role", "role_context"]

# A context variable, not a global: each role call (and the tasks it starts) sees its own.
_current: ContextVar[RunContext | None] = ContextVar("raf_role_context", default=None)


def role_context() -> RunContext | None:
    """The run context of the role being played in this task, or None."""
    return _current.get()


@contextmanager
def playing_role(ctx: RunContext) -> Generator[None]:
    """Make `ctx` the context adapters stream to while the block runs."""
    token = _current.set(ctx)
    try:
        yield
    finally:
        _current.reset(token)
