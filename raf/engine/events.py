"""Engine events: what a workflow run reports, one slotted dataclass per kind.

A run reports events to a sink (`async def on_event(event)`); `Workflow.run_stream` hands them
to a consumer through one bounded stream and `Workflow.run` collects them. Events are plain
dataclasses, not pydantic models (nor frozen ones, which pay a call per field to build),
because the engine makes several per node. Treat them as read-only.

`WorkflowFailed` is the *event* reporting a failed run; the exception a
`WorkflowAgent` raises is `raf.errors.WorkflowError`.

Example:
    >>> NodeCompleted("writer", output=None).node_id
    'writer'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

from raf.updates import AgentUpdate

__all__ = [
    "CheckpointSaved",
    "NodeCompleted",
    "NodeFailed",
    "NodeInvoking",
    "NodeStreaming",
    "NodeWaiting",
    "RequestInfo",
    "SuperstepCompleted",
    "WorkflowFailed",
    "WorkflowEvent",
    "WorkflowOutput",
]


@dataclass(slots=True)
class NodeInvoking:
    """A node starts handling one message."""

    node_id: str


@dataclass(slots=True)
class NodeStreaming:
    """A node streamed an `AgentUpdate` (its path relative to the workflow)."""

    node_id: str
    update: AgentUpdate


@dataclass(slots=True)
class NodeCompleted:
    """A node finished handling one message; `output` is what `handle` returned."""

    node_id: str
    output: Any = None


@dataclass(slots=True)
class NodeWaiting:
    """A node's handling stopped to wait for human answers (`request_ids`); it re-runs from
    its start when they come."""

    node_id: str
    request_ids: tuple[str, ...] = ()


@dataclass(slots=True)
class NodeFailed:
    """A node raised `error`; the run fails after this event."""

    node_id: str
    error: BaseException


@dataclass(slots=True)
class WorkflowOutput:
    """A node yielded `value` as an output of the workflow."""

    value: Any
    node_id: str = field(default="", kw_only=True)


@dataclass(slots=True)
class WorkflowFailed:
    """The run failed with `error` (the last event of a failed run)."""

    error: BaseException
    node_id: str | None = field(default=None, kw_only=True)


@dataclass(slots=True)
class SuperstepCompleted:
    """Superstep `index` (counted from 0) finished and its messages were delivered."""

    index: int


@dataclass(slots=True)
class CheckpointSaved:
    """A checkpoint was saved after a superstep; resume from `checkpoint_id`."""

    checkpoint_id: str
    superstep: int = field(default=0, kw_only=True)


@dataclass(slots=True)
class RequestInfo:
    """A node asks a human; answer `request_id` when resuming (the run ends waiting)."""

    request_id: str
    payload: Any
    node_id: str = field(default="", kw_only=True)
    path: tuple[str, ...] = field(default=(), kw_only=True)
    """The agent path of the workflow that asked (`()` for a workflow run directly)."""


WorkflowEvent: TypeAlias = (
    NodeInvoking
    | NodeStreaming
    | NodeCompleted
    | NodeWaiting
    | NodeFailed
    | WorkflowOutput
    | WorkflowFailed
    | SuperstepCompleted
    | CheckpointSaved
    | RequestInfo
)
"""Any event of a workflow run."""
