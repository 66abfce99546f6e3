"""Small building blocks shared by the engine tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from raf.engine import FunctionExecutor, NodeContext, WorkflowEvent

Handler = Callable[[Any, NodeContext], Awaitable[Any]]


class Calls:
    """Counts how often each node handled a message, and with what."""

    def __init__(self) -> None:
        self.count: Counter[str] = Counter()
        self.inputs: dict[str, list[Any]] = {}

    def node(self, node_id: str, fn: Handler) -> FunctionExecutor:
        """A FunctionExecutor running `fn`, counted."""

        async def counted(message: Any, ctx: NodeContext) -> Any:
            self.count[node_id] += 1
            self.inputs.setdefault(node_id, []).append(message)
            return await fn(message, ctx)

        return FunctionExecutor(node_id, counted)

    def forward(self, node_id: str, change: Callable[[Any], Any] = lambda m: m) -> FunctionExecutor:
        """A counted node sending `change(message)` on."""

        async def send(message: Any, ctx: NodeContext) -> None:
            await ctx.send(change(message))

        return self.node(node_id, send)

    def output(self, node_id: str, change: Callable[[Any], Any] = lambda m: m) -> FunctionExecutor:
        """A counted node yielding `change(message)` as an output."""

        async def emit(message: Any, ctx: NodeContext) -> None:
            await ctx.yield_output(change(message))

        return self.node(node_id, emit)


def kinds(events: list[WorkflowEvent]) -> list[tuple[Any, ...]]:
    """Each event as (class name, node id or index), for ordering checks."""
    out: list[tuple[Any, ...]] = []
    for event in events:
        name = type(event).__name__
        if hasattr(event, "node_id"):
            out.append((name, event.node_id))  # type: ignore[union-attr]
        elif hasattr(event, "index"):
            out.append((name, event.index))  # type: ignore[union-attr]
        else:
            out.append((name,))
    return out
