"""The superstep runner (BSP): runs the nodes with pending messages, delivers what they sent.

Every node with pending messages runs in the superstep (one node directly, several in one task
group); each handles its messages in order. Sends wait in per-node outboxes and are delivered
in node order at the end of the superstep, so delivery does not depend on scheduling. A failing
node cancels its siblings; a node that asks a human suspends, and the run ends waiting after
the superstep. Events go to a sink callback, with no stream in between.

Only the outermost runner of a run saves checkpoints. A nested workflow's runner keeps its
state in the session after each of its supersteps and has the root save one then, holding the
root's state as of the start of its superstep in progress; resuming from it re-runs that
superstep, and the nested workflow continues from its kept state.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.lowlevel

from raf._streaming import unwrap_group as unwrap
from raf.engine.checkpointing import save_checkpoint
from raf.engine.codec import CheckpointValueError
from raf.engine.context import NodeContext, NodeWork, Suspended
from raf.engine.edges import FanIn, Outbox
from raf.engine.events import (
    CheckpointSaved,
    NodeCompleted,
    NodeFailed,
    NodeInvoking,
    NodeWaiting,
    RequestInfo,
    SuperstepCompleted,
    WorkflowEvent,
    WorkflowFailed,
)
from raf.engine.state import PendingRequest, RunState, RunStatus, Suspension
from raf.engine.waiting import CHECKPOINTER, ENGINE_ROOT, RESPONSES, clear_running, keep_running
from raf.errors import WorkflowError
from raf.run import RunContext
from raf.session import Session

if TYPE_CHECKING:
    from raf.engine.workflow import Workflow

__all__ = ["EventSink", "NestedRun", "Runner", "unwrap"]

EventSink = Callable[[WorkflowEvent], Awaitable[None]]
"""Receives each event of a run, in order; awaited (so it may back-pressure the run)."""

_YIELD_EVERY = 0.005
"""Seconds of supersteps without a scheduling point before the runner yields to the loop."""

_Job = tuple[str, list[Any], int, int, bool]
"""(node id, messages, superstep, first request ordinal, resuming)"""


@dataclass(frozen=True, slots=True)
class NestedRun:
    """Where a nested workflow's run keeps its state, for which call, and who checkpoints it."""

    key: str
    """The session key (`"{agent path}#running"`)."""
    call: str
    """The parent's call that runs it (`"{node}@{superstep}#{n}"`, after the parent's own)."""
    root: Runner
    """The outermost runner, which saves the checkpoints."""


class Runner:
    """Runs one workflow run to its end: completed, failed or waiting.

    Args:
        workflow: the graph.
        state: where the run stands (new, or decoded from a checkpoint).
        sink: receives the events.
        session: the run's session (node states live there).
        scope: the workflow's agent path in the run, `()` when run directly; it prefixes
            request ids and node state keys.
        agent_context: the `RunContext` when the workflow runs as an agent; streamed items
            then go straight to its `emit`.
        checkpoints: save a checkpoint to `session.store` after each superstep (the outermost
            runner of a run only).
        nested: for a nested workflow whose root checkpoints, where to keep its state.
    """

    __slots__ = (
        "_scope",
        "_yielded",
        "agent_context",
        "calls",
        "checkpoints",
        "extras",
        "failure",
        "input_tokens",
        "nested",
        "output_tokens",
        "prefix",
        "routes",
        "scope",
        "session",
        "sink",
        "start",
        "state",
        "successors",
        "workflow",
    )

    def __init__(
        self,
        workflow: Workflow,
        state: RunState,
        sink: EventSink,
        session: Session,
        *,
        scope: tuple[str, ...] = (),
        agent_context: RunContext | None = None,
        checkpoints: bool = False,
        nested: NestedRun | None = None,
    ) -> None:
        self.workflow = workflow
        self.routes = workflow.routes
        self.successors = workflow.successors
        self.state = state
        self.sink = sink
        self.session = session
        self.scope = scope
        self.prefix = "/".join(scope) + "/" if scope else ""
        self.agent_context = agent_context
        self.checkpoints = checkpoints and session.store is not None
        self.nested = nested
        self.start: RunState | None = None
        """The root's state as of the start of the superstep in progress (when checkpointing)."""
        self.calls: dict[str, str] = {}
        """The root's record of which call runs each nested workflow agent, by agent path."""
        self.extras: dict[str, Any] = (
            agent_context.extras
            if agent_context is not None
            else {RESPONSES: state.answers, ENGINE_ROOT: True}
        )
        self.failure: tuple[str, BaseException] | None = None
        self.input_tokens = 0
        """Input tokens of the agents the nodes ran (through `NodeContext.invoke_agent`)."""
        self.output_tokens = 0
        """Output tokens of those agents."""
        self._scope: anyio.CancelScope | None = None
        self._yielded = time.monotonic()

    async def execute(self) -> RunStatus:
        """Run supersteps until no message is pending, a node fails, or requests are pending."""
        if not self.checkpoints:
            return await self._execute()
        # Nested workflow agents find the root here to have their progress checkpointed.
        extras = self.extras
        extras[CHECKPOINTER] = self
        try:
            return await self._execute()
        finally:
            del extras[CHECKPOINTER]

    async def _execute(self) -> RunStatus:
        state = self.state
        if state.suspended:
            status = await self._resume_suspended()
            if status is not None:
                return status
        bound = self.workflow.max_supersteps
        while state.pending:
            index = state.superstep
            if bound is not None and index >= bound:
                return await self._exceeded(bound)
            if index & 7 == 7:
                await self._pause()
            batch = state.pending
            state.pending = {}
            state.superstep = index + 1
            if self.checkpoints:
                # Nothing below changes these until the superstep's nodes are done.
                self.start = RunState(
                    index, batch, {}, state.fan_in, [], state.answers, state.outputs
                )
            jobs: list[_Job] = [
                (node, messages, index, 0, False) for node, messages in batch.items()
            ]
            status = await self._superstep(index, jobs)
            if status is not None:
                return status
        return "completed"

    async def _pause(self) -> None:
        """Let the event loop run now and then, so a loop of nodes that never wait still meets
        its deadlines (and lets other tasks run) without paying a yield per superstep."""
        now = time.monotonic()
        if now - self._yielded >= _YIELD_EVERY:
            self._yielded = now
            await anyio.lowlevel.checkpoint()
        else:
            await anyio.lowlevel.checkpoint_if_cancelled()

    async def _resume_suspended(self) -> RunStatus | None:
        """Re-run, in the superstep they belong to, the handlings that waited and whose
        requests all have answers; the others keep waiting without running."""
        state = self.state
        suspended = state.suspended
        requests = state.requests
        answers = state.answers
        if self.checkpoints:
            self.start = RunState(
                state.superstep,
                state.pending,
                suspended,
                state.fan_in,
                requests,
                answers,
                state.outputs,
            )
        unanswered = {r.node_id for r in requests if r.request_id not in answers}
        state.suspended = {n: s for n, s in suspended.items() if n in unanswered}
        state.requests = [r for r in requests if r.node_id in unanswered]
        ready = [(n, s) for n, s in suspended.items() if n not in unanswered]
        if not ready:
            return await self._still_waiting()
        extras = self.extras
        responses = extras.get(RESPONSES)
        if responses is not answers:
            # Nested workflow agents that run again need every answer, earlier turns' too.
            extras[RESPONSES] = {**(responses or {}), **answers}
        jobs: list[_Job] = [(n, s.messages, s.superstep, s.ordinal, True) for n, s in ready]
        status = await self._superstep(max(s.superstep for _, s in ready), jobs, resumed=True)
        if not state.suspended:
            answers.clear()
        return status

    async def _still_waiting(self) -> RunStatus:
        """Nothing can run yet: report the open requests again (and checkpoint the answers)."""
        state = self.state
        for request in state.requests:
            if request.request_id not in state.answers:
                await self.sink(
                    RequestInfo(request.request_id, request.payload, node_id=request.node_id)
                )
        if self.checkpoints:
            status = await self._checkpoint(state.superstep - 1)
            if status is not None:
                return status
        return "waiting"

    async def _superstep(
        self, index: int, jobs: list[_Job], *, resumed: bool = False
    ) -> RunStatus | None:
        if len(jobs) == 1:
            works = [await self._run_node(*jobs[0])]
        else:
            works = [NodeWork(self, *job) for job in jobs]
            async with anyio.create_task_group() as tg:
                self._scope = tg.cancel_scope
                for work, job in zip(works, jobs, strict=True):
                    tg.start_soon(self._run_node, *job, work)
            self._scope = None
        state = self.state
        asked = len(state.requests)
        touched: list[FanIn] = []
        for work in works:
            # Node order, not completion order: nothing here depends on scheduling.
            if work.outputs:
                state.outputs.extend(work.outputs)
            if work.suspension is not None:
                state.suspended[work.node_id] = work.suspension
                state.requests.extend(work.requests)
            if work.outbox:
                self._deliver(work.node_id, work.outbox, touched)
        if touched:
            self._release(touched)
        if self.failure is not None:
            node_id, error = self.failure
            await self.sink(NodeFailed(node_id, error))
            await self.sink(WorkflowFailed(error, node_id=node_id))
            return "failed"
        if resumed:
            # Handlings still waiting did not run: their open requests are reported again.
            for request in state.requests[:asked]:
                if request.request_id not in state.answers:
                    await self.sink(
                        RequestInfo(request.request_id, request.payload, node_id=request.node_id)
                    )
        for request in state.requests[asked:]:
            # A nested workflow agent already put its own requests on the agent stream.
            if not (request.forwarded and self.agent_context is not None):
                await self.sink(
                    RequestInfo(request.request_id, request.payload, node_id=request.node_id)
                )
        if self.agent_context is None:
            # An agent's stream has no item for it: skip making one per superstep.
            await self.sink(SuperstepCompleted(index))
        if self.checkpoints:
            status = await self._checkpoint(index)
            if status is not None:
                return status
        elif self.nested is not None and not state.requests:
            status = await self._keep_running()
            if status is not None:
                return status
        return "waiting" if state.requests else None

    async def _run_node(
        self,
        node_id: str,
        messages: list[Any],
        superstep: int,
        ordinal: int,
        resuming: bool,
        work: NodeWork | None = None,
    ) -> NodeWork:
        if work is None:
            work = NodeWork(self, node_id, messages, superstep, ordinal, resuming)
        executor = self.workflow.executors[node_id]
        ctx = NodeContext(work)
        outbox = work.outbox
        outputs = work.outputs
        sink = self.sink
        for position, message in enumerate(messages):
            await sink(NodeInvoking(node_id))
            sent = len(outbox)
            yielded = len(outputs)
            first_ordinal = work.ordinal
            try:
                output = await executor.handle(message, ctx)
            except Suspended as suspended:
                waits = [suspended]
            except BaseExceptionGroup as group:
                waits, rest = _split_waits(group)
                if rest is not None:
                    if not isinstance(rest, Exception):
                        raise
                    self._fail(node_id, rest)
                    return work
            except Exception as exc:
                self._fail(node_id, exc)
                return work
            else:
                work.resuming = False
                await sink(NodeCompleted(node_id, output))
                continue
            # The handling waits: drop what it sent and yielded; it re-runs on resume.
            del outbox[sent:]
            del outputs[yielded:]
            work.suspension = Suspension(superstep, first_ordinal, messages[position:])
            work.requests = [
                PendingRequest(request_id, node_id, payload, wait.forwarded)
                for wait in waits
                for request_id, payload in wait.requests
            ]
            await sink(NodeWaiting(node_id, tuple(r.request_id for r in work.requests)))
            return work
        return work

    def _fail(self, node_id: str, error: BaseException) -> None:
        if self.failure is None:
            self.failure = (node_id, unwrap(error))
        if self._scope is not None:
            self._scope.cancel()

    def _deliver(self, source: str, outbox: Outbox, touched: list[FanIn]) -> None:
        """Queue `source`'s messages for their targets; buffer fan-in messages."""
        state = self.state
        pending = state.pending
        for target, message in outbox:
            if type(target) is str:
                queue = pending.get(target)
                if queue is None:
                    pending[target] = [message]
                else:
                    queue.append(message)
                continue
            assert isinstance(target, FanIn)
            buffers = state.fan_in.get(target.index)
            if buffers is None:
                buffers = state.fan_in[target.index] = {}
            buffers.setdefault(source, []).append(message)
            if target not in touched:
                touched.append(target)

    def _release(self, touched: list[FanIn]) -> None:
        """Deliver each fan-in whose sources have all sent: one list, in source order."""
        state = self.state
        for fan_in in touched:
            buffers = state.fan_in[fan_in.index]
            if len(buffers) < len(fan_in.sources):
                continue
            del state.fan_in[fan_in.index]
            combined = [m for src in fan_in.sources for m in buffers[src]]
            queue = state.pending.get(fan_in.target)
            if queue is None:
                state.pending[fan_in.target] = [combined]
            else:
                queue.append(combined)

    async def checkpoint_within(self) -> None:
        """Save a checkpoint inside the superstep in progress (a nested workflow finished one
        of its own): the root's state as of the superstep's start, and the session now.

        Raises:
            CheckpointValueError: naming what is not serializable.
        """
        start = self.start
        store = self.session.store
        assert start is not None and store is not None
        workflow = self.workflow
        completed = start.superstep - 1
        checkpoint_id = await save_checkpoint(
            store,
            self.session,
            workflow_id=workflow.id,
            fingerprint=workflow.fingerprint,
            scope=self.scope,
            superstep=completed,
            state=start,
        )
        await self.sink(CheckpointSaved(checkpoint_id, superstep=completed))

    async def _keep_running(self) -> RunStatus | None:
        """Keep this nested run's state in the session and have the root checkpoint."""
        nested = self.nested
        assert nested is not None
        try:
            keep_running(
                self.session,
                nested.key,
                call=nested.call,
                state=self.state,
                graph=self.workflow.fingerprint,
            )
            await nested.root.checkpoint_within()
        except CheckpointValueError as exc:
            await self.sink(WorkflowFailed(exc, node_id=exc.node_id))
            return "failed"
        return None

    async def _checkpoint(self, index: int) -> RunStatus | None:
        store = self.session.store
        assert store is not None
        workflow = self.workflow
        # Between supersteps no nested workflow runs: drop states a restored session kept for
        # calls this run did not make again.
        clear_running(self.session, self.prefix)
        try:
            checkpoint_id = await save_checkpoint(
                store,
                self.session,
                workflow_id=workflow.id,
                fingerprint=workflow.fingerprint,
                scope=self.scope,
                superstep=index,
                state=self.state,
            )
        except CheckpointValueError as exc:
            await self.sink(WorkflowFailed(exc, node_id=exc.node_id))
            return "failed"
        await self.sink(CheckpointSaved(checkpoint_id, superstep=index))
        return None

    async def _exceeded(self, bound: int) -> RunStatus:
        nodes = list(self.state.pending)
        error = WorkflowError(
            nodes[0],
            message=(
                f"workflow {self.workflow.id!r} reached its bound of {bound} supersteps with "
                f"messages still pending for {nodes}; raise it with set_max_supersteps() or "
                "make the cycle end"
            ),
        )
        await self.sink(WorkflowFailed(error, node_id=nodes[0]))
        return "failed"


def _split_waits(
    group: BaseExceptionGroup[BaseException],
) -> tuple[list[Suspended], BaseException | None]:
    """The `Suspended` signals in `group` in order, and what else it holds (unwrapped)."""
    matched, rest = group.split(Suspended)
    waits: list[Suspended] = []

    def collect(item: BaseException) -> None:
        if isinstance(item, Suspended):
            waits.append(item)
        elif isinstance(item, BaseExceptionGroup):
            for member in cast(Any, item).exceptions:
                collect(member)

    if matched is not None:
        collect(matched)
    return waits, unwrap(rest) if rest is not None else None
