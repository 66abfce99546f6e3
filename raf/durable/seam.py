"""The durable-execution seam: what a raf run asks of an engine that makes it durable.

A run is local unless its `Turn` carries a `Durability` (`Turn.durable`); then every model
call and tool call goes through it as a *step* with a stable id (the agent's place and the
call's index there), and each node's work in a workflow's superstep as a *node step* (the
workflow's place, the node and the superstep), so an engine that records steps can replay a
recovered run without making a completed call, or running a completed node, again. The local
default is no seam at all: one `is None` test per call and per superstep. `raf.durable.dbos`
implements it on DBOS; another engine (Temporal) can implement the same four calls.

Example:
    >>> from raf.run import Turn
    >>> Turn().durable is None
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from raf.steps import DurableSteps
from raf.steps import ModelCall as ModelCall
from raf.steps import ToolCall as ToolCall

if TYPE_CHECKING:
    from raf.engine.context import NodeWork
    from raf.engine.runner import Job, Runner

__all__ = ["Durability", "ModelCall", "ToolCall"]


class Durability(DurableSteps, Protocol):
    """Runs a run's steps durably: each step once, its result recorded under a stable id.

    Steps of one run are started in a deterministic order (a durable run runs the concurrent
    tool calls of one answer one after another, and the agent calls of one node, a vote's
    voters say, one at a time in the order made; the nodes of a superstep start in node order
    and their results are taken in node order), so the n-th step of a workflow is the same
    step when a recovered run replays.

    The core carries it as `raf.steps.DurableSteps`, which cannot name the engine's types;
    this is the same contract with them.
    """

    async def node_steps(self, runner: Runner, jobs: list[Job]) -> list[NodeWork]:
        """Run the nodes of one superstep of `runner`, each as a node step (concurrently, on
        any worker, when there are several); their works in the order of `jobs`."""
        ...
