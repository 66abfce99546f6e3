"""`Workflow`: an immutable, validated graph of executors, and how to run it.

Build one with `WorkflowBuilder`. `run()` collects a run into a `WorkflowResult`;
`run_stream()` streams its events; `resume()` / `resume_stream()` continue a run from a
checkpoint; `as_agent()` makes it an `IAgent`.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel

from raf._session_turns import finish_turn, watched
from raf._single_writer import OnBusy, holding
from raf.engine.checkpointing import DECODING_ERRORS, damaged, read_checkpoint
from raf.engine.edges import Edge, Route
from raf.engine.events import CheckpointSaved, RequestInfo, WorkflowEvent, WorkflowFailed
from raf.engine.executors import Executor
from raf.engine.runner import EventSink, Runner
from raf.engine.state import RunState, RunStatus
from raf.engine.stream import WorkflowStream
from raf.run import Turn
from raf.session import Session, checked_session
from raf.traced import telemetry_at_start as active_telemetry
from raf.updates import RequestInfoUpdate

if TYPE_CHECKING:
    import networkx as nx

    from raf.engine.facade import WorkflowAgent
    from raf.stores.base import Checkpoint, CheckpointStore

__all__ = ["Workflow", "WorkflowResult"]


@dataclass(frozen=True, slots=True)
class WorkflowResult:
    """A finished (or waiting) run: its outputs, every event, and how it ended.

    A failed run is returned, not raised: `status == "failed"` and `error` holds the exception
    (also in the final `WorkflowFailed` event).

    Example:
        >>> WorkflowResult(outputs=[3], events=[], status="completed").error is None
        True
    """

    outputs: list[Any]
    """Values yielded by the nodes, in order (from the run's very start when resumed)."""
    events: list[WorkflowEvent]
    """Every event of this run, in order."""
    status: RunStatus
    """`completed`, `failed`, or `waiting` (human requests pending)."""
    requests: tuple[RequestInfo, ...] = field(default=())
    """The requests a waiting run waits on, oldest first."""

    @property
    def error(self) -> BaseException | None:
        """The error a failed run failed with, else None."""
        for event in reversed(self.events):
            if isinstance(event, WorkflowFailed):
                return event.error
        return None

    @property
    def checkpoint_id(self) -> str | None:
        """The id of the last checkpoint this run saved, if any."""
        for event in reversed(self.events):
            if isinstance(event, CheckpointSaved):
                return event.checkpoint_id
        return None


class _Collector:
    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: list[WorkflowEvent] = []

    async def __call__(self, event: WorkflowEvent) -> None:
        self.events.append(event)


class Workflow:
    """A validated workflow graph; immutable, and shared safely by any number of runs.

    Example:
        >>> from raf.engine import FunctionExecutor, WorkflowBuilder
        >>> async def add_one(n, ctx):
        ...     await ctx.yield_output(n + 1)
        >>> workflow = WorkflowBuilder("calc").add_executor(FunctionExecutor("add", add_one)).set_start("add").build()
        >>> import anyio
        >>> anyio.run(workflow.run, 41).outputs
        [42]
    """

    __slots__ = (
        "_declared",
        "_edges",
        "_executors",
        "_fingerprint",
        "_graph",
        "_id",
        "_kind",
        "_max_supersteps",
        "_routes",
        "_start",
        "_successors",
    )

    def __init__(
        self,
        id: str,
        *,
        start: str,
        executors: Mapping[str, Executor],
        edges: tuple[Edge, ...],
        routes: Mapping[str, tuple[Route, ...]],
        max_supersteps: int | None,
        graph: nx.DiGraph[str] | None = None,
    ) -> None:
        self._id = id
        self._start = start
        self._executors = MappingProxyType(dict(executors))
        self._edges = edges
        self._routes = MappingProxyType({node: routes.get(node, ()) for node in executors})
        self._successors = MappingProxyType(
            {
                node: frozenset(t for route in node_routes for t in route.targets())
                for node, node_routes in self._routes.items()
            }
        )
        self._max_supersteps = max_supersteps
        self._graph = graph
        shape = [id, start, list(executors), [[e.source, e.target, e.kind] for e in edges]]
        self._fingerprint = hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:16]
        self._kind = "graph"
        self._declared = False

    def __repr__(self) -> str:
        return f"Workflow(id={self._id!r}, nodes={list(self._executors)})"

    @property
    def id(self) -> str:
        """The workflow id."""
        return self._id

    @property
    def kind(self) -> str:
        """The pattern this workflow was built with (`graph`, `sequential`, …)."""
        return self._kind

    def with_kind(self, kind: str) -> Workflow:
        """This workflow, reporting `kind` as its pattern (its agent's `metadata.kind`).

        Returns a copy: a workflow never changes once built.

        Example:
            >>> from raf.engine import FunctionExecutor, WorkflowBuilder
            >>> async def noop(message, ctx): ...
            >>> graph = WorkflowBuilder("w").add_executor(FunctionExecutor("a", noop)).set_start("a").build()
            >>> (graph.with_kind("sequential").kind, graph.kind)
            ('sequential', 'graph')
        """
        clone = copy.copy(self)
        clone._kind = kind
        return clone

    @property
    def start_id(self) -> str:
        """The node that receives the run's input."""
        return self._start

    @property
    def max_supersteps(self) -> int | None:
        """The superstep bound, or None (an acyclic graph ends by itself)."""
        return self._max_supersteps

    @property
    def executors(self) -> Mapping[str, Executor]:
        """The nodes by id, in the order they were added."""
        return self._executors

    @property
    def edges(self) -> tuple[Edge, ...]:
        """Every source-to-target edge, in the order declared."""
        return self._edges

    @property
    def routes(self) -> Mapping[str, tuple[Route, ...]]:
        """Each node's outgoing routes, as the runner follows them."""
        return self._routes

    @property
    def successors(self) -> Mapping[str, frozenset[str]]:
        """Each node's possible targets."""
        return self._successors

    @property
    def fingerprint(self) -> str:
        """A digest of the nodes and edges; a checkpoint resumes only on the same graph."""
        return self._fingerprint

    @property
    def graph(self) -> nx.DiGraph[str]:
        """A networkx `DiGraph` copy (node attribute `kind`, edge attributes `kind`, `label`)."""
        if self._graph is None:
            from raf.engine.validation import to_digraph

            self._graph = to_digraph(
                self._id, executors=self._executors, edges=self._edges, start=self._start
            )
        return self._graph.copy()

    def declare_models(self) -> None:
        """Let checkpoints bring back the model types this workflow's nodes declare and its
        agents (to any depth) output (done once, before anything is decoded on resume)."""
        if self._declared:
            return
        from raf.agent import BaseAgent
        from raf.engine.codec import register_model

        agents: list[Any] = []
        for executor in self._executors.values():
            for model in executor.models():
                register_model(model)
            agents.append(executor.as_agent())
        while agents:
            # raf's own agents, to any depth (an agent that is not raf's keeps its own state).
            agent = agents.pop()
            if not isinstance(agent, BaseAgent):
                continue
            agent = cast("BaseAgent[Any]", agent)  # isinstance cannot tell the value type
            schema: Any = getattr(agent, "schema", None)
            if isinstance(schema, type) and issubclass(schema, BaseModel):
                register_model(schema)
            agents.extend(agent.subagents())
        self._declared = True

    def to_mermaid(self) -> str:
        """The graph as a Mermaid flowchart (conditions dashed, fan-in/fan-out labelled)."""
        from raf.engine.rendering import to_mermaid

        return to_mermaid(self)

    def to_dot(self) -> str:
        """The graph in Graphviz DOT (conditions dashed, fan-in/fan-out labelled)."""
        from raf.engine.rendering import to_dot

        return to_dot(self)

    def as_agent(
        self,
        id: str | None = None,
        *,
        name: str | None = None,
        description: str = "",
        kind: str | None = None,
    ) -> WorkflowAgent:
        """This workflow as an `IAgent` (a `WorkflowAgent`), `id` defaulting to the workflow's.

        `kind` defaults to the workflow's own (`graph`, or the builder's pattern name).
        """
        from raf.engine.facade import WorkflowAgent

        return WorkflowAgent(self, id, name=name, description=description, kind=kind or self._kind)

    def run_stream(
        self, input: Any, session: Session | None = None, *, on_busy: OnBusy = "reject"
    ) -> WorkflowStream:
        """Start a run on `input` and stream its events: `async with ... as events`.

        Node failures arrive as `NodeFailed` and `WorkflowFailed` events (nothing is raised).
        Checkpoints go to `session.store` when there is one. `on_busy` as in `run`.
        """
        return WorkflowStream(lambda sink: self._start_run(input, session, sink, on_busy))

    async def run(
        self, input: Any, session: Session | None = None, *, on_busy: OnBusy = "reject"
    ) -> WorkflowResult:
        """Run on `input` to the end and return the `WorkflowResult` (failures included).

        `on_busy="wait"` queues the run behind another run of `session` instead of raising.

        Raises:
            SessionBusy: another run of `session` is in progress (in this process, or in
                another one sharing its store).
        """
        collector = _Collector()
        status, state = await self._start_run(input, session, collector, on_busy)
        return _result(status, state, collector.events)

    def resume_stream(
        self,
        checkpoint_id: str,
        store: CheckpointStore,
        responses: Mapping[str, Any] | None = None,
        session: Session | None = None,
        *,
        on_busy: OnBusy = "reject",
    ) -> WorkflowStream:
        """Continue the run saved as `checkpoint_id`, streaming its events; see `resume`."""
        return WorkflowStream(
            lambda sink: self._resume_run(checkpoint_id, store, responses, session, sink, on_busy)
        )

    async def resume(
        self,
        checkpoint_id: str,
        store: CheckpointStore,
        responses: Mapping[str, Any] | None = None,
        session: Session | None = None,
        *,
        on_busy: OnBusy = "reject",
    ) -> WorkflowResult:
        """Continue the run saved as `checkpoint_id` in `store`, answering pending requests.

        Nodes that completed before the checkpoint do not run again; a handling that waited
        re-runs from its start and its `request_info` returns the answer. The session (a new
        one with the checkpoint's id and `store` when None) gets the checkpoint's state.
        `on_busy="wait"` waits for another run of the session to end instead of raising (a
        worker taking over from one that just died, say).

        Raises:
            KeyError: when the store has no such checkpoint.
            ValueError: when the checkpoint belongs to another workflow or graph, or a
                response answers no pending request.
            SessionBusy: another run of the checkpoint's session is in progress (in this
                process, or in another one sharing `store`).
        """
        collector = _Collector()
        status, state = await self._resume_run(
            checkpoint_id, store, responses, session, collector, on_busy
        )
        return _result(status, state, collector.events)

    async def _start_run(
        self, input: Any, session: Session | None, sink: EventSink, on_busy: OnBusy
    ) -> tuple[RunStatus, RunState]:
        from raf.engine.protocol import RootRun

        state = RunState.start(self._start, input)
        run_session = Session() if session is None else checked_session(session)
        root = RootRun(run_session, None)
        telemetry = active_telemetry()
        turn = Turn(engine=root, telemetry=telemetry)
        progress = root if root.checkpoints else None
        runner = Runner(self, state, sink, run_session, turn=turn, progress=progress)
        root.bind(runner)

        async def execute() -> tuple[RunStatus, RunState]:
            work = runner.execute()
            if telemetry is not None:
                work = telemetry.workflow(self._id, run_session, resumed=False, work=work)
            return await work, state

        if session is None:  # a fresh session: nothing else can hold it
            return await execute()
        async with holding(session, wait=on_busy == "wait", path=(self._id,)):
            return await self._kept(session, execute)

    async def _resume_run(
        self,
        checkpoint_id: str,
        store: CheckpointStore,
        responses: Mapping[str, Any] | None,
        session: Session | None,
        sink: EventSink,
        on_busy: OnBusy,
    ) -> tuple[RunStatus, RunState]:
        self.declare_models()
        checkpoint = await store.load(checkpoint_id)
        state, scope, snapshot = read_checkpoint(
            checkpoint, workflow_id=self._id, fingerprint=self._fingerprint, nodes=self._executors
        )
        unknown = state.answer(dict(responses or {}))
        if unknown:
            pending = [request.request_id for request in state.requests]
            raise ValueError(
                f"responses for {unknown} answer no pending request of checkpoint "
                f"{checkpoint_id!r}; pending requests: {pending}"
            )
        if session is None:
            session = Session(id=checkpoint.session_id, store=store)
        else:
            checked_session(session)
        held = session

        async def execute() -> tuple[RunStatus, RunState]:
            return await self._resume_held(
                state, scope, snapshot, checkpoint, responses, held, sink
            )

        async with holding(session, wait=on_busy == "wait", path=(self._id,)):
            return await self._kept(session, execute)

    async def _kept(
        self, session: Session, execute: Callable[[], Awaitable[tuple[RunStatus, RunState]]]
    ) -> tuple[RunStatus, RunState]:
        """Run `execute` as one turn on `session` (see `raf._session_turns`): stopped should
        its lock be lost, and kept (what it waits on, and the state, with a store) unless it
        failed."""
        status, state = await watched(session, execute, (self._id,))
        if status != "failed":
            waiting = _waiting_requests(state) if status == "waiting" else []
            await finish_turn(session, self._id, waiting)
        return status, state

    async def _resume_held(
        self,
        state: RunState,
        scope: tuple[str, ...],
        snapshot: dict[str, Any],
        checkpoint: Checkpoint,
        responses: Mapping[str, Any] | None,
        session: Session,
        sink: EventSink,
    ) -> tuple[RunStatus, RunState]:
        from raf.engine.protocol import (
            RootRun,
            TurnRecord,
            answer_messages,
            check_kept_states,
            finish_resumed_turn,
            restore_session,
        )

        data = checkpoint.data.get("turn")
        try:
            turn_data = None if data is None else TurnRecord.from_json(data)
            check_kept_states(snapshot)
        except DECODING_ERRORS as exc:
            raise damaged(checkpoint.id, self._id, exc) from exc
        restore_session(session, snapshot, scope)
        root = RootRun(session, None if turn_data is None else turn_data[0])
        answers = answer_messages(state, responses or {})
        telemetry = active_telemetry()
        turn = Turn(
            answers=dict(state.answers), errors=set(state.errors), engine=root, telemetry=telemetry
        )
        runner = Runner(self, state, sink, session, scope=scope, turn=turn, progress=root)
        root.bind(runner)
        if turn_data is not None and not answers:
            # Mid-turn: what the turn produced before the checkpoint is still the turn's.
            runner.produced.extend(turn_data[1])
        if telemetry is None:
            status = await runner.execute()
        else:
            work = runner.execute()
            status = await telemetry.workflow(self._id, session, resumed=True, work=work)
        if turn_data is not None:
            finish_resumed_turn(self, session, turn_data, state, status, answers, runner.produced)
        return status, state


def _waiting_requests(state: RunState) -> list[RequestInfoUpdate]:
    """The requests a waiting run waits on, as stream items, oldest first."""
    return [
        RequestInfoUpdate(request_id=r.request_id, payload=r.payload, path=r.path)
        for r in state.requests
        if r.request_id not in state.answers
    ]


def _result(status: RunStatus, state: RunState, events: list[WorkflowEvent]) -> WorkflowResult:
    return WorkflowResult(
        outputs=[value for _, value in state.outputs],
        events=events,
        status=status,
        requests=tuple(
            RequestInfo(r.request_id, r.payload, node_id=r.node_id, path=r.path)
            for r in state.requests
            if r.request_id not in state.answers
        )
        if status == "waiting"
        else (),
    )
