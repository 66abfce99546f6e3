"""`NodeContext`: what a node's `handle` uses to send, yield, stream and ask a human.

The runner makes one context per node per superstep. Sends are buffered in the node's outbox
and delivered at the end of the superstep; a handling that stops at `request_info` has its
sends dropped and is re-run from its start when the run resumes with the answer.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, cast

import anyio

from raf.agent import BaseAgent, default_options, invoke_in_place
from raf.engine.children import FOREIGN, WAITING, forget_waiting, invoke_foreign_child
from raf.engine.codec import encode
from raf.engine.edges import Outbox
from raf.engine.events import NodeStreaming, WorkflowOutput
from raf.engine.state import PendingRequest, Suspension
from raf.errors import AgentError
from raf.messages import ChatMessage
from raf.run import RunContext
from raf.session import Session
from raf.updates import AgentPath, AgentResponse, AgentUpdate

if TYPE_CHECKING:
    from raf.agent import IAgent
    from raf.engine.runner import Runner

__all__ = ["NodeContext", "NodeWork", "Suspended"]


class Suspended(BaseException):
    """Raised through a handling that waits for human answers; the runner catches it.

    A `BaseException`, so `except Exception` in node code does not swallow it.
    """

    def __init__(self, requests: list[tuple[str, Any, AgentPath]], *, forwarded: bool) -> None:
        super().__init__(", ".join(request_id for request_id, _, _ in requests))
        self.requests = requests
        self.forwarded = forwarded


class NodeWork:
    """The runner's bookkeeping for one node in one superstep."""

    __slots__ = (
        "calls",
        "declared",
        "kept",
        "lock",
        "messages",
        "node_id",
        "ordinal",
        "outbox",
        "outputs",
        "produced",
        "replies",
        "requests",
        "resuming",
        "runner",
        "superstep",
        "suspension",
    )

    def __init__(
        self,
        runner: Runner,
        node_id: str,
        messages: list[Any],
        superstep: int,
        ordinal: int,
        resumed: Suspension | None,
    ) -> None:
        self.runner = runner
        self.node_id = node_id
        self.messages = messages
        self.superstep = superstep
        self.ordinal = ordinal
        """Ordinal of the node's next `request_info` call in this superstep."""
        self.resuming = resumed is not None
        """True while re-running a handling that waited for answers."""
        self.kept: dict[str, AgentResponse] = {} if resumed is None else dict(resumed.replies)
        """Responses of the calls the re-run handling made before it waited, by call name and
        agent id."""
        self.replies: dict[str, AgentResponse] = {}
        """Responses of the calls that continued a wait and completed in the current handling,
        likewise."""
        self.outbox: Outbox = []
        """What the node sent, delivered at the end of the superstep."""
        self.outputs: list[tuple[str, Any]] = []
        """What the node yielded, recorded at the end of the superstep."""
        self.produced: list[ChatMessage] = []
        """Messages the node's agents produced (and it yielded), recorded likewise."""
        self.requests: list[PendingRequest] = []
        """Requests of the suspended handling."""
        self.suspension: Suspension | None = None
        """Set when a handling waits for answers."""
        self.calls: dict[str, int] = {} if resumed is None else dict(resumed.calls)
        """Calls made so far in this superstep, per agent id (each call is named by it)."""
        self.declared: frozenset[str] | None = None
        """The ids of the agents the node declares (`Executor.agents`), once a call needs them."""
        self.lock: anyio.Lock | None = None
        """In a durable run, held by each `invoke_agent` call: the node's calls one at a time."""


class NodeContext:
    """A node's view of the run: send messages on, yield outputs, stream updates, ask a human.

    Example:
        >>> async def review(draft, ctx: NodeContext):
        ...     verdict = await ctx.request_info({"draft": draft})
        ...     ctx.state["reviews"] = ctx.state.get("reviews", 0) + 1
        ...     if verdict == "ok":
        ...         await ctx.yield_output(draft)
        ...     else:
        ...         await ctx.send(draft, to="rewrite")
    """

    __slots__ = ("_run_context", "_state", "_work")

    def __init__(self, work: NodeWork) -> None:
        self._work = work
        self._state: dict[str, Any] | None = None
        self._run_context: RunContext | None = None

    @property
    def node_id(self) -> str:
        """The id of the node being run."""
        return self._work.node_id

    @property
    def superstep(self) -> int:
        """Index of the current superstep (from 0)."""
        return self._work.superstep

    @property
    def successors(self) -> frozenset[str]:
        """The nodes this node can send to (empty for a terminal node)."""
        work = self._work
        return work.runner.successors[work.node_id]

    @property
    def session(self) -> Session:
        """The session the run belongs to."""
        return self._work.runner.session

    @property
    def state(self) -> dict[str, Any]:
        """This node's state in this session: persists across runs and is checkpointed.

        Keep JSON-able values in it. Changes made by a handling that then waits for an answer
        are kept (the handling re-runs on resume, so make them idempotent).
        """
        state = self._state
        if state is None:
            work = self._work
            runner = work.runner
            key = f"{runner.prefix}{work.node_id}#state"
            found: Any = runner.session.get(key)
            state = cast(dict[str, Any], found) if isinstance(found, dict) else {}
            runner.session.set(key, state)
            self._state = state
        return state

    @property
    def run_context(self) -> RunContext:
        """The `RunContext` agents run in from this node.

        When the workflow runs as an agent it is that agent's context (items reach its stream
        directly); otherwise a context at the workflow's scope whose items become `NodeStreaming`
        events of this node.
        """
        context = self._work.runner.agent_context
        if context is not None:
            return context
        context = self._run_context
        if context is None:
            runner = self._work.runner
            context = RunContext(
                runner.scope, runner.session, default_options(), self._stream, turn=runner.turn
            )
            self._run_context = context
        return context

    async def send(self, message: Any, to: str | None = None) -> None:
        """Send `message` along this node's edges (only to the successor `to`, when given).

        Messages are delivered at the next superstep.

        Raises:
            ValueError: when `to` is not a successor of this node.
        """
        work = self._work
        runner = work.runner
        if to is not None and to not in runner.successors[work.node_id]:
            successors = sorted(runner.successors[work.node_id])
            raise ValueError(
                f"node {work.node_id!r} cannot send to {to!r}: it is not a successor "
                f"(successors: {successors}); add an edge to it first"
            )
        outbox = work.outbox
        for route in runner.routes[work.node_id]:
            route.deliver(message, to, outbox)

    async def yield_output(self, value: Any) -> None:
        """Yield `value` as an output of the workflow (a `WorkflowOutput` event, reported now).

        The value joins the run's outputs when the handling completes; a handling that waits for
        a human yields it again when it re-runs.
        """
        work = self._work
        work.outputs.append((work.node_id, value))
        messages = _messages_of(value)
        if messages:
            produced = work.produced
            known = {id(m) for m in produced}
            produced.extend(m for m in messages if id(m) not in known)
        await work.runner.sink(WorkflowOutput(value, node_id=work.node_id))

    async def emit(self, update: AgentUpdate) -> None:
        """Stream `update` out; its path is taken relative to the workflow."""
        runner = self._work.runner
        context = runner.agent_context
        if context is None:
            await runner.sink(NodeStreaming(self._work.node_id, update))
        else:
            await context.emit(update.model_copy(update={"path": runner.scope + update.path}))

    async def request_info(self, payload: Any) -> Any:
        """Ask a human; returns the answer once the run resumes with it.

        Without an answer yet, the handling stops here (await it in the handling itself, not
        in a task it started): its sends and outputs are dropped, its message stays pending, a
        `RequestInfo` event is reported at the end of the superstep and the run ends waiting.
        Resuming re-runs the handling from its start with the same message; this call then
        returns the answer. The request id is `"{workflow path}/{node id}@{superstep}#{n}"`
        (`n` counts the node's questions in the superstep): stable across the re-run, unique
        across parallel branches and nesting levels.
        """
        work = self._work
        runner = work.runner
        request_id = f"{runner.asks}{work.node_id}@{work.superstep}#{work.ordinal}"
        work.ordinal += 1
        answers = runner.state.answers
        telemetry = runner.turn.telemetry
        if request_id in answers:
            if telemetry is not None:
                telemetry.answered(runner.session, request_id, work.node_id, runner.scope)
            return answers[request_id]
        # The run keeps the payload to resume: one with no JSON form fails this node now,
        # before the request is reported.
        encode(payload, f"the payload of request {request_id!r}", work.node_id)
        if telemetry is not None:
            telemetry.asked(runner.session, request_id, work.node_id, runner.scope)
        raise Suspended([(request_id, payload, runner.scope)], forwarded=False)

    def invoke_agent(
        self, agent: IAgent, messages: list[ChatMessage]
    ) -> Coroutine[Any, Any, AgentResponse]:
        """Run `agent` as part of this node, forwarding its stream; wait when it waits.

        The agent's usage counts toward the usage of the workflow agent's response.

        When the agent (raf's or not) ends waiting for a human, this node waits too, on the
        same request ids; on resume the agent continues from where it stopped. When the run
        checkpoints, each call is named `"{node}@{superstep}#{n}"`, so a resume that re-runs
        this superstep lets the same call of a nested workflow continue from its kept state.

        In a durable run (`raf.durable`) the node's calls run one at a time, in the order
        they were made (calls made at once from tasks run in the order the tasks start):
        their model and tool calls are recorded steps, numbered in the order they start, so
        a recovered run must start them in the same order whatever their latencies.
        """
        context = self.run_context
        work = self._work
        if context.turn.durable is None:
            # The call's own coroutine, with no coroutine of this method's around it.
            return self._invoke(agent, messages, context, work)
        return self._invoke_in_turn(agent, messages, context, work)

    async def _invoke_in_turn(
        self, agent: IAgent, messages: list[ChatMessage], context: RunContext, work: NodeWork
    ) -> AgentResponse:
        """`_invoke` in a durable run: one call of the node's at a time."""
        lock = work.lock
        if lock is None:
            lock = work.lock = anyio.Lock()
        async with lock:
            return await self._invoke(agent, messages, context, work)

    async def _invoke(
        self, agent: IAgent, messages: list[ChatMessage], context: RunContext, work: NodeWork
    ) -> AgentResponse:
        runner = work.runner
        # Named like a request id, so the same call gets the same name when a resume re-runs
        # this superstep: its requests, and the states it keeps, are found again.
        count = work.calls.get(agent.id, 0)
        work.calls[agent.id] = count + 1
        name = f"{work.node_id}@{work.superstep}#{count}"
        place = context.place + self._segment(agent.id, name)
        reply = f"{name}/{agent.id}"
        kept = work.kept.pop(reply, None) if work.resuming else None
        if kept is not None:
            # It completed before the handling waited: steps that completed never run again.
            work.replies[reply] = kept
            return kept
        call: str | None = None
        engine = context.turn.engine
        if engine is not None and engine.checkpoints:
            call = name if runner.call is None else f"{runner.call}/{name}"
        base = "/".join(place)
        session = context.session
        # A call that continues a wait of an earlier turn cannot run again once it completed
        # (its waiting state is spent): its response is kept while the handling waits.
        continues = work.resuming and (
            session.get(base + WAITING) is not None or session.get(base + FOREIGN) is not None
        )
        # `BaseAgent` among the type's bases first: the usual case, without the ABC's check.
        if BaseAgent in type(agent).__mro__ or isinstance(agent, BaseAgent):
            if not work.resuming and context.session.get(base + WAITING) is not None:
                # A fresh call: what the agent kept from an earlier wait is stale.
                forget_waiting(context.session, base)
            agent = cast("BaseAgent[Any]", agent)
            response = await invoke_in_place(agent, messages, context, call, place)
        else:
            response = await invoke_foreign_child(
                agent, messages, context, place, fresh=not work.resuming
            )
        # The run's usage is counted here, once per agent call, whatever the node does with
        # the response (a nested workflow's response already sums its own tree).
        usage = response.usage
        runner.input_tokens += usage.input_tokens
        runner.output_tokens += usage.output_tokens
        work.produced.extend(response.messages)
        if response.status == "waiting":
            if not response.pending:
                path = "/".join((*context.path, agent.id))
                raise AgentError(
                    f"agent {path!r} ended its turn waiting but names no pending request, so "
                    "no answer could ever resume it; an agent that waits lists the requests "
                    "it waits on in its response's `pending`",
                    path=(*context.path, agent.id),
                )
            raise Suspended(
                [(r.request_id, r.payload, r.path) for r in response.pending], forwarded=True
            )
        if continues:
            work.replies[reply] = response
        return response

    def _segment(self, agent_id: str, name: str) -> AgentPath:
        """Where call `name` of agent `agent_id` sits below this workflow, in request ids and
        the agent's waiting state: its plain id for the first call of an agent this node
        declares (the agent of an agent node, say), else the call and then the id, so every
        call asks with its own ids."""
        work = self._work
        runner = work.runner
        if agent_id != work.node_id:
            declared = work.declared
            if declared is None:
                # Looked up once per node and superstep, not per call (a vote's poll makes one
                # call per voter).
                agents = runner.workflow.executors[work.node_id].agents()
                declared = work.declared = frozenset(a.id for a in agents)
            if agent_id not in declared:
                return (name, agent_id)
        if runner.state.entered.setdefault(agent_id, name) == name:
            return (agent_id,)
        return (name, agent_id)

    async def _stream(self, update: AgentUpdate) -> None:
        await self._work.runner.sink(NodeStreaming(self._work.node_id, update))


def _messages_of(value: Any) -> list[ChatMessage]:
    if isinstance(value, ChatMessage):
        return [value]
    if isinstance(value, AgentResponse):
        return list(value.messages)
    if type(value) is list:
        items = cast(list[Any], value)
        return [item for item in items if isinstance(item, ChatMessage)]
    return []
