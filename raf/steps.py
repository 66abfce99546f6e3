"""What the core carries for the packages that record a run's calls: the durable seam
(`Turn.durable`, implemented by `raf.durable`) and the tool-call journal of a checkpointed run
(`OuterRun.journal`, implemented by `raf.tools.journal`).

The core only hands these down a run's tree; the ReAct loop and the engine call them. They
are declared here, as Protocols, so that the core imports neither package: both import the
engine and the core back (DESIGN §1, layers point one way).

Example:
    >>> from raf.run import Turn
    >>> Turn().durable is None
    True
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from raf._tool_data import ToolResult
    from raf.messages import ToolCallContent
    from raf.providers.base import Completion
    from raf.run import RunContext
    from raf.updates import Usage

__all__ = ["CallJournal", "DurableSteps", "ModelCall", "ToolCall"]

ModelCall = Callable[["RunContext"], Awaitable["tuple[Completion, Usage]"]]
"""One streamed model call, given the context whose `emit` gets its live tokens."""

ToolCall = Callable[["ToolCallContent", "RunContext"], Awaitable["ToolResult"]]
"""Runs one tool call (a ReAct loop's dispatch)."""


class DurableSteps(Protocol):
    """Runs a run's steps durably, each once, its result recorded under a stable id (the
    full contract, with the engine's types, is `raf.durable.seam.Durability`)."""

    # The engine's `Runner`, `Job`s and `NodeWork`s: the core may not name the engine's types
    # (the engine is above it), and only the engine calls this, with its own. The engine-typed
    # signature that implementations follow is `raf.durable.seam.Durability.node_steps`.
    async def node_steps(self, runner: Any, jobs: list[Any]) -> list[Any]:
        """Run the nodes of one superstep of `runner`, each as a node step; their works in
        the order of `jobs`."""
        ...

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


class CallJournal(Protocol):
    """Records the tool calls of a checkpointed run, and tells a resumed run's calls what
    became of them (`raf.tools.journal.ToolJournal`)."""

    async def check(
        self,
        ctx: RunContext,
        calls: Sequence[tuple[int, ToolCallContent]],
        idempotent: frozenset[str],
    ) -> None:
        """Before a round of calls (`(index, call)`) runs: make sure each call in doubt has a
        human's decision (raises `InDoubt` with the requests asked, or `ToolError`)."""
        ...

    async def call(
        self, ctx: RunContext, index: int, call: ToolCallContent, run: ToolCall, *, idempotent: bool
    ) -> ToolResult:
        """Run call `index` of the agent at `ctx.place` through `run`, recorded before and
        after, or give its recorded result."""
        ...
