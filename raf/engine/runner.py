"""The superstep runner (BSP): runs the nodes with pending messages, delivers what they sent.

Every node with pending messages runs in the superstep (one node directly, several in one task
group); each handles its messages in order. Sends wait in per-node outboxes and are delivered
in node order at the end of the superstep, so delivery does not depend on scheduling. A failing
node cancels its siblings; a node that asks a human suspends, and the run ends waiting after
the superstep. Events go to a sink callback, with no stream in between.

After each superstep the runner calls its `Progress` (checkpoints and nested runs' kept
state belong to `raf.engine.protocol`, which makes it): the runner only schedules supersteps.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio
import anyio.lowlevel

from raf._streaming import unwrap_group as unwrap
from raf.engine.context import NodeContext, NodeWork, Suspended
from raf.engine.edges import FanIn, Outbox
from raf.engine.events import (
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
from raf.errors import WorkflowError
from raf.messages import ChatMessage
from raf.run import RunContext, Turn
from raf.session import Session

if TYPE_CHECKING:
    from raf.engine.workflow import Workflow

__all__ = ["EventSink", "Job", "NodeReports", "Progress", "Runner", "unwrap"]

EventSink = Callable[[WorkflowEvent], Awaitable[None]]
"""Receives each event of a run, in order; awaited (so it may back-pressure the run)."""


class NodeReports(Protocol):
    """Reports each node's start and end (two per node, so the workflow agent's sink takes
    them directly, making no `NodeInvoking` and `NodeCompleted` to map)."""

    def invoking(self, node_id: str) -> Awaitable[None]:
        """Node `node_id` starts handling one message."""
        ...

    def completed(self, node_id: str, output: Any) -> Awaitable[None]:
        """Node `node_id` finished handling one message with `output`."""
        ...


class _AsEvents:
    """`NodeReports` as events for a sink."""

    __slots__ = ("_sink",)

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink

    def invoking(self, node_id: str) -> Awaitable[None]:
        return self._sink(NodeInvoking(node_id))

    def completed(self, node_id: str, output: Any) -> Awaitable[None]:
        return self._sink(NodeCompleted(node_id, output))


_YIELD_EVERY = 0.005
"""Seconds of supersteps without a scheduling point before the runner yields to the loop."""

_Job = tuple[str, list[Any], int, int, Suspension | None]
"""(node id, messages, superstep, first request ordinal, the suspension a re-run resumes)"""
Job = _Job
"""One node's work in a superstep, as `Durability.node_steps` gets it (`raf.durable`)."""


class Progress(Protocol):
    """What happens after each superstep: a checkpoint, or a nested run's state kept."""

    @property
    def keeps_start(self) -> bool:
        """Whether the runner keeps its state as of each superstep's start (`Runner.start`)."""
        ...

    async def saved(self, runner: Runner, index: int) -> RunStatus | None:
        """Superstep `index` ended; return `"failed"` to end the run (after reporting why)."""
        ...


class Runner:
    """Runs one workflow run to its end: completed, failed or waiting.

    Args:
        workflow: the graph.
        state: where the run stands (new, or decoded from a checkpoint).
        sink: receives the events.
        reports: reports each node's start and end instead of `sink` (as its events).
        session: the run's session (node states live there).
        scope: the workflow's agent path in the run, `()` when run directly; it prefixes
            request ids and node state keys.
        agent_context: the `RunContext` when the workflow runs as an agent; streamed items
            then go straight to its `emit`.
        turn: what the run's tree shares, when the workflow runs directly.
        progress: called after each superstep (checkpoints, a nested run's kept state).
        call: the parent node's call that runs this (nested) workflow, when checkpointing.
    """

    __slots__ = (
        "_scope",
        "_yielded",
        "agent_context",
        "asks",
        "call",
        "completed",
        "failure",
        "input_tokens",
        "invoking",
        "output_tokens",
        "prefix",
        "produced",
        "progress",
        "routes",
        "scope",
        "session",
        "sink",
        "start",
        "state",
        "successors",
        "turn",
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
        turn: Turn | None = None,
        progress: Progress | None = None,
        call: str | None = None,
        reports: NodeReports | None = None,
    ) -> None:
        self.workflow = workflow
        self.routes = workflow.routes
        self.successors = workflow.successors
        self.state = state
        self.sink = sink
        if reports is None:
            reports = _AsEvents(sink)
        self.invoking = reports.invoking
        self.completed = reports.completed
        self.session = session
        self.scope = scope
        self.prefix = "/".join(scope) + "/" if scope else ""
        place = scope if agent_context is None else agent_context.place
        self.asks = "/".join(place) + "/" if place else ""
        """Prefix of the run's request ids: its place (see `RunContext`), joined."""
        self.agent_context = agent_context
        self.turn: Turn = (
            agent_context.turn
            if agent_context is not None
            else turn
            if turn is not None
            else Turn()
        )
        self.progress = progress
        self.call = call
        self.start: RunState | None = None
        """The state as of the start of the superstep in progress (when `progress` keeps it)."""
        self.produced: list[ChatMessage] = []
        """Messages the agents of this run's nodes produced so far, in node order."""
        self.failure: tuple[str, BaseException] | None = None
        self.input_tokens = 0
        """Input tokens of the agents the nodes ran (through `NodeContext.invoke_agent`)."""
        self.output_tokens = 0
        """Output tokens of those agents."""
        self._scope: anyio.CancelScope | None = None
        self._yielded = time.monotonic()

    async def execute(self) -> RunStatus:
        """Run supersteps until no message is pending, a node fails, or requests are pending."""
        state = self.state
        if state.suspended:
            status = await self._resume_suspended()
            if status is not None:
                return status
        bound = self.workflow.max_supersteps
        keeps_start = self.progress is not None and self.progress.keeps_start
        telemetry = self.turn.telemetry
        while state.pending:
            index = state.superstep
            if bound is not None and index >= bound:
                return await self._exceeded(bound)
            if index & 7 == 7:
                await self._pause()
            batch = state.pending
            state.pending = {}
            state.superstep = index + 1
            if keeps_start:
                # Nothing below changes these until the superstep's nodes are done.
                self.start = RunState(
                    index,
                    batch,
                    {},
                    state.fan_in,
                    [],
                    state.answers,
                    state.outputs,
                    state.entered,
                    state.run,
                    state.errors,
                )
            jobs: list[_Job] = [
                (node, messages, index, 0, None) for node, messages in batch.items()
            ]
            if telemetry is None:
                status = await self._superstep(index, jobs)
            else:
                step = self._superstep(index, jobs)
                status = await telemetry.superstep(self, self.workflow.id, index, list(batch), step)
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
        if self.progress is not None and self.progress.keeps_start:
            self.start = RunState(
                state.superstep,
                state.pending,
                suspended,
                state.fan_in,
                requests,
                answers,
                state.outputs,
                state.entered,
                state.run,
                state.errors,
            )
        unanswered = {r.node_id for r in requests if r.request_id not in answers}
        state.suspended = {n: s for n, s in suspended.items() if n in unanswered}
        state.requests = [r for r in requests if r.node_id in unanswered]
        ready = [(n, s) for n, s in suspended.items() if n not in unanswered]
        if not ready:
            return await self._still_waiting()
        # Nested workflow agents that run again need every answer, earlier turns' too.
        shared = self.turn.answers
        for request_id, value in answers.items():
            shared.setdefault(request_id, value)
        jobs: list[_Job] = [(n, s.messages, s.superstep, s.ordinal, s) for n, s in ready]
        index = max(s.superstep for _, s in ready)
        step = self._superstep(index, jobs, resumed=True)
        telemetry = self.turn.telemetry
        if telemetry is None:
            status = await step
        else:
            nodes = [n for n, _ in ready]
            status = await telemetry.superstep(
                self, self.workflow.id, index, nodes, step, resumed=True
            )
        if not state.suspended:
            answers.clear()
        return status

    async def _still_waiting(self) -> RunStatus:
        """Nothing can run yet: report the open requests again (and checkpoint the answers)."""
        state = self.state
        for request in state.requests:
            if request.request_id not in state.answers:
                await self._report(request)
        if self.progress is not None:
            status = await self.progress.saved(self, state.superstep - 1)
            if status is not None:
                return status
        return "waiting"

    async def _report(self, request: PendingRequest) -> None:
        await self.sink(
            RequestInfo(
                request.request_id, request.payload, node_id=request.node_id, path=request.path
            )
        )

    async def _superstep(
        self, index: int, jobs: list[_Job], *, resumed: bool = False
    ) -> RunStatus | None:
        durable = self.turn.durable
        if durable is not None:
            # Each node's work is a recorded step of its own (raf.durable).
            works = await durable.node_steps(self, jobs)
        elif len(jobs) == 1:
            works = [await self._run_node(*jobs[0])]
        else:
            works = [NodeWork(self, *job) for job in jobs]
            async with anyio.create_task_group() as tg:
                self._scope = tg.cancel_scope
                for work, job in zip(works, jobs, strict=True):
                    tg.start_soon(self._run_node, *job, work, name=_NODE_TASK)
            self._scope = None
        state = self.state
        asked = len(state.requests)
        touched: list[FanIn] = []
        produced = self.produced
        for work in works:
            # Node order, not completion order: nothing here depends on scheduling.
            if work.produced:
                produced.extend(work.produced)
            if work.outputs:
                state.outputs.extend(work.outputs)
            if work.suspension is not None:
                state.suspended[work.node_id] = work.suspension
                state.requests.extend(work.requests)
                for request in work.requests:
                    # Asked again (a nested agent that did not take the answer): open again.
                    state.answers.pop(request.request_id, None)
                    state.errors.discard(request.request_id)
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
                    await self._report(request)
        for request in state.requests[asked:]:
            # A nested agent already put its own requests on the agent stream.
            if not (request.forwarded and self.agent_context is not None):
                await self._report(request)
        if self.agent_context is None:
            # An agent's stream has no item for it: skip making one per superstep.
            await self.sink(SuperstepCompleted(index))
        if self.progress is not None:
            status = await self.progress.saved(self, index)
            if status is not None:
                return status
        return "waiting" if state.requests else None

    async def _run_node(
        self,
        node_id: str,
        messages: list[Any],
        superstep: int,
        ordinal: int,
        resumed: Suspension | None,
        work: NodeWork | None = None,
    ) -> NodeWork:
        if work is None:
            work = NodeWork(self, node_id, messages, superstep, ordinal, resumed)
        executor = self.workflow.executors[node_id]
        ctx = NodeContext(work)
        outbox = work.outbox
        outputs = work.outputs
        for position, message in enumerate(messages):
            await self.invoking(node_id)
            sent = len(outbox)
            yielded = len(outputs)
            first_ordinal = work.ordinal
            first_calls = dict(work.calls)
            work.replies = {}
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
                await self.completed(node_id, output)
                continue
            # The handling waits: drop what it sent and yielded; it re-runs on resume.
            del outbox[sent:]
            del outputs[yielded:]
            work.suspension = Suspension(
                superstep, first_ordinal, messages[position:], first_calls, work.replies
            )
            work.requests = [
                PendingRequest(request_id, node_id, payload, wait.forwarded, path)
                for wait in waits
                for request_id, payload, path in wait.requests
            ]
            await self.sink(NodeWaiting(node_id, tuple(r.request_id for r in work.requests)))
            return work
        return work

    def _fail(self, node_id: str, error: BaseException) -> None:
        if self.failure is None:
            self.failure = (node_id, unwrap(error))
        if self._scope is not None:
            self._scope.cancel()

    # What a durable run's node steps call (`raf.durable.nodes`): run one `Job` here, and
    # record a node's failure (the first wins).
    run_node = _run_node
    fail = _fail

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


_NODE_TASK = f"{Runner.__module__}.{Runner.run_node.__qualname__}"
"""The name anyio gives a node's task (`get_callable_name` of `Runner._run_node`), given so
that it is not made again for every task (some 4,000 instructions each)."""


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
