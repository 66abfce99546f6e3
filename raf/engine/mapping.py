"""The WorkflowAgent event mapping: engine events onto the agent stream.

| engine                 | agent stream                                                   |
|------------------------|----------------------------------------------------------------|
| `NodeInvoking` (as `invoking`) | `ExecutorInvoking(executor_id)`                       |
| `NodeStreaming(item)`  | the item, its path prefixed with the workflow agent's path     |
| `NodeCompleted` (as `completed`) | `ExecutorInvoked(executor_id, messages, value)`     |
| `NodeWaiting`          | `ExecutorInvoked(executor_id, status="waiting")`               |
| `NodeFailed`, `WorkflowFailed` | raises `raf.errors.WorkflowError` (an `AgentError` from a node propagates as itself) |
| `WorkflowOutput`       | the response's messages (`ChatMessage` / list / `AgentResponse`) or value |
| `RequestInfo`          | `RequestInfoUpdate(request_id, payload)`; the run ends waiting  |

The engine reports straight into the run's `emit` (no stream in between), a node's start and
end through `AgentSink.invoking` / `completed` (`raf.engine.runner.NodeReports`: the runner
makes no `NodeInvoking` or `NodeCompleted` for a workflow agent), and agents
inside nodes emit their items with their full path already, so nesting adds no copy per item.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeGuard, cast

from raf._trusted import executor_invoked, executor_invoking
from raf.engine.events import (
    NodeFailed,
    NodeStreaming,
    NodeWaiting,
    RequestInfo,
    SuperstepCompleted,
    WorkflowEvent,
    WorkflowFailed,
)
from raf.errors import AgentError, WorkflowError
from raf.messages import ChatMessage
from raf.run import RunContext
from raf.updates import AgentResponse, ExecutorInvoked, RequestInfoUpdate

__all__ = ["AgentSink", "is_messages"]


class AgentSink:
    """Maps a workflow agent's engine events onto its stream; keeps the failure to raise."""

    __slots__ = ("asked", "emit", "error", "error_node", "path")

    def __init__(self, ctx: RunContext) -> None:
        self.emit = ctx.emit
        self.path = ctx.path
        self.asked = ctx.turn.asked
        self.error: BaseException | None = None
        self.error_node: str | None = None

    async def __call__(self, event: WorkflowEvent) -> None:
        kind = type(event)
        if kind is NodeStreaming:
            assert isinstance(event, NodeStreaming)
            update = event.update
            await self.emit(update.model_copy(update={"path": self.path + update.path}))
        elif kind is SuperstepCompleted:
            return
        elif kind is NodeWaiting:
            assert isinstance(event, NodeWaiting)
            await self.emit(
                ExecutorInvoked(executor_id=event.node_id, status="waiting", path=self.path)
            )
        elif kind is RequestInfo:
            assert isinstance(event, RequestInfo)
            self.asked.append(event.request_id)
            await self.emit(
                RequestInfoUpdate(
                    request_id=event.request_id, payload=event.payload, path=event.path
                )
            )
        elif kind is NodeFailed or kind is WorkflowFailed:
            assert isinstance(event, NodeFailed | WorkflowFailed)
            if self.error is None:
                self.error = event.error
                self.error_node = event.node_id

    def invoking(self, node_id: str) -> Awaitable[None]:
        """Node `node_id` starts: its `ExecutorInvoking` (see `raf.engine.runner.NodeReports`)."""
        return self.emit(executor_invoking(node_id, self.path))

    def completed(self, node_id: str, output: Any) -> Awaitable[None]:
        """Node `node_id` finished with `output`: its `ExecutorInvoked`."""
        return self.emit(_invoked(node_id, output, self.path))

    def failure(self) -> AgentError:
        """The exception a failed run raises (an `AgentError` from a node as itself)."""
        error = self.error
        # A failure outside any node (a session key that cannot be checkpointed) is the
        # workflow's own.
        node = self.error_node or (self.path[-1] if self.path else "?")
        if isinstance(error, AgentError):
            return error.with_path(self.path)
        failure = WorkflowError(node, error, path=self.path)
        failure.__cause__ = error
        return failure


def _invoked(node_id: str, output: Any, path: tuple[str, ...]) -> ExecutorInvoked:
    if type(output) is AgentResponse or isinstance(output, AgentResponse):
        response = cast("AgentResponse[Any]", output)  # isinstance cannot tell the value type
        return executor_invoked(node_id, response.messages, response.value, path)
    if is_messages(output):
        return executor_invoked(node_id, output, None, path)
    return executor_invoked(node_id, [], output, path)


_ONLY_MESSAGES = {ChatMessage}


def is_messages(value: Any) -> TypeGuard[list[ChatMessage]]:
    """True for a list of messages; `[]` too, so an empty conversation is no value."""
    if type(value) is not list:
        return False
    return not value or set(map(type, cast(list[Any], value))) == _ONLY_MESSAGES
