"""`RunState`: everything a workflow run carries from one superstep to the next.

The runner mutates it; checkpoints and waiting agents keep it (encoded by `raf.engine.checkpointing`).
It lives for one run and is never shared between sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from raf._defaults import new_dict, new_list, new_set

__all__ = ["PendingRequest", "RunState", "RunStatus", "Suspension"]

RunStatus = Literal["completed", "failed", "waiting"]
"""How a run ended: no messages left, a node failed, or human requests are pending."""


@dataclass(slots=True)
class Suspension:
    """A node's handling that stopped at `request_info`, to be re-run on resume."""

    superstep: int
    """The superstep it ran in (request ids keep naming it)."""
    ordinal: int
    """The node's request ordinal when the suspended handling began."""
    messages: list[Any]
    """The suspended message and the ones the node had not handled yet."""
    calls: dict[str, int] = field(default_factory=new_dict)
    """The node's agent calls in the superstep before the suspended handling, per agent id
    (so a re-run names its calls as the first run did)."""
    replies: dict[str, Any] = field(default_factory=new_dict)
    """The responses of the agent calls of the handling that continued a wait and completed,
    by call name and agent id (`"{node}@{superstep}#{n}/{agent}"`): a re-run gets them back
    instead of running those agents afresh."""


@dataclass(slots=True)
class PendingRequest:
    """A request for a human answer that the run waits on."""

    request_id: str
    node_id: str
    payload: Any
    forwarded: bool = False
    """True when a nested agent asked it (and reported it itself)."""
    path: tuple[str, ...] = ()
    """The agent path of the workflow that asked (its `RequestInfoUpdate.path`)."""


@dataclass(slots=True)
class RunState:
    """Pending messages, fan-in buffers, suspended nodes, requests, answers and outputs."""

    superstep: int = 0
    """Index of the next superstep to run."""
    pending: dict[str, list[Any]] = field(default_factory=new_dict)
    """Messages delivered for the next superstep, per node, in delivery order."""
    suspended: dict[str, Suspension] = field(default_factory=new_dict)
    """Nodes waiting for answers, per node."""
    fan_in: dict[int, dict[str, list[Any]]] = field(default_factory=new_dict)
    """Messages buffered per fan-in (by index), per source, until every source sent."""
    requests: list[PendingRequest] = field(default_factory=new_list)
    """Requests the run waits on, oldest first."""
    answers: dict[str, Any] = field(default_factory=new_dict)
    """Answers to requests of suspended handlings, by request id."""
    outputs: list[tuple[str, Any]] = field(default_factory=new_list)
    """`(node id, value)` of every output yielded so far."""
    entered: dict[str, str] = field(default_factory=new_dict)
    """The first call (`"{node}@{superstep}#{n}"`) that ran each agent id a node declares;
    only that call's requests and kept states go by the agent's plain path."""
    run: str = ""
    """The id of the root run whose tool calls are recorded (`raf.tools.journal`), given when
    a run that checkpoints starts; empty otherwise."""
    errors: set[str] = field(default_factory=new_set)
    """The requests of `answers` answered with an error result (`Turn.errors`)."""

    @classmethod
    def start(cls, node_id: str, message: Any) -> RunState:
        """The state of a new run: `message` pending for the start node."""
        return cls(pending={node_id: [message]})

    def answer(self, responses: dict[str, Any]) -> list[str]:
        """Record the answers to pending requests; return the ids that are not pending."""
        pending = {request.request_id for request in self.requests}
        unknown: list[str] = []
        for request_id, value in responses.items():
            if request_id in pending:
                self.answers[request_id] = value
            else:
                unknown.append(request_id)
        return unknown
