"""The durable-execution seam: what a raf run asks of an engine that makes it durable.

A run is local unless its `Turn` carries a `Durability` (`Turn.durable`); then every model
call and tool call goes through it as a *step* with a stable id (the agent's place and the
call's index there), so an engine that records steps can replay a recovered run without
making a completed call again. The local default is no seam at all: one `is None` test per
call. `raf.durable.dbos` implements it on DBOS; another engine (Temporal) can implement the
same three calls.

Example:
    >>> from raf.run import Turn
    >>> Turn().durable is None
    True
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from raf.messages import ToolCallContent
    from raf.providers.base import Completion
    from raf.run import RunContext
    from raf.tools.tool import ToolResult
    from raf.updates import Usage

__all__ = ["Durability", "ModelCall", "ToolCall"]

ModelCall = Callable[["RunContext"], Awaitable["tuple[Completion, Usage]"]]
"""One streamed model call, given the context whose `emit` gets its live tokens."""

ToolCall = Callable[["ToolCallContent", "RunContext"], Awaitable["ToolResult"]]
"""Runs one tool call (a ReAct loop's dispatch)."""


class Durability(Protocol):
    """Runs a run's steps durably: each step once, its result recorded under a stable id.

    Steps of one run are started in a deterministic order (a durable run runs concurrent
    tool calls and nodes one after another), so the n-th step of a place is the same step
    when a recovered run replays.
    """

    async def model_call(self, ctx: RunContext, call: ModelCall) -> tuple[Completion, Usage]:
        """Run the model call `call` as a step of the agent at `ctx.place`, or give the
        recorded result of a replayed one (its tokens are not streamed again)."""
        ...

    async def tool_call(
        self, ctx: RunContext, call: ToolCallContent, run: ToolCall, *, idempotent: bool
    ) -> ToolResult:
        """Run tool call `call` as a step recorded before and after it runs; a call that
        started before a crash and has no recorded end is *in doubt*: run again when
        `idempotent`, else decided by a human (re-run, skip with a result, or fail)."""
        ...
