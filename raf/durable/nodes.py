"""Node steps: one node's work in a superstep, carried to a child workflow and back as JSON.

A durable run records each node's work in a superstep as a DBOS child workflow (its *node
step*), started by the workflow run it belongs to and run by any worker. `spec_of` writes
what the node needs (its messages, the run's answers, the session, the options) as a
`NodeSpec`; `run_node_step` runs the node from one in the child workflow, rebuilding the
workflow's runner there from the agent tree every worker builds alike; `apply_result` puts
the `NodeResult` back into the parent's runner as the `NodeWork` the node would have left
had it run there. Messages and values go through the checkpoint codec (`raf.engine.codec`):
what a checkpoint cannot hold, a node step cannot carry either.

Example:
    >>> NodeSpec.model_validate_json(NodeSpec(
    ...     root="r", parent="r", path=["team"], place=["team"], call=None, node="writer",
    ...     superstep=0, ordinal=0, state={}, answers={}, session="", options="{}",
    ... ).model_dump_json()).node
    'writer'
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from raf import errors
from raf.agent import IAgent, RunOptions
from raf.budget import BudgetTracker
from raf.durable.envelopes import FailedEnvelope
from raf.engine.checkpointing import decode_state, encode_state
from raf.engine.codec import decode, encode
from raf.engine.context import NodeWork
from raf.engine.edges import FanIn
from raf.engine.facade import WorkflowAgent
from raf.engine.mapping import AgentSink
from raf.engine.runner import Job, Runner
from raf.engine.state import RunState
from raf.engine.workflow import Workflow
from raf.errors import AgentError, DurableRunError
from raf.run import Emit, RunContext, Turn
from raf.session import Session
from raf.updates import AgentPath, AgentUpdate

__all__ = [
    "NodeResult",
    "NodeSpec",
    "apply_result",
    "error_from",
    "error_of",
    "run_node_step",
    "spec_of",
    "workflow_at",
]


class NodeSpec(BaseModel):
    """What a node step needs to run the node on any worker."""

    model_config = ConfigDict(frozen=True)
    root: str
    """The durable run's id (its top-level workflow): where tokens go live."""
    parent: str
    """The id of the workflow that started this node step (it collects the result)."""
    path: list[str]
    """The workflow agent's path (the runner's scope)."""
    place: list[str]
    """Its place (request ids and waiting state go by it)."""
    call: str | None
    """The parent node's call that runs this workflow, when any."""
    node: str
    """The node."""
    superstep: int
    """The superstep."""
    ordinal: int
    """The node's first request ordinal in the superstep."""
    state: dict[str, Any]
    """The node's messages (as pending), the suspension it resumes, the run's answers and
    entered calls, as `encode_state` writes them."""
    answers: dict[str, Any]
    """The turn's answers, by request id (encoded)."""
    errors: list[str] = Field(default_factory=list[str])
    """The requests of `answers` answered with an error result (`Turn.errors`)."""
    session: str
    """The session at the superstep's start (`Session.to_json`)."""
    options: str
    """The run's options (JSON)."""
    spent: tuple[int, int] = (0, 0)
    """The model calls and tokens the run had spent against its budget when the node step
    started (its budget counts on from there)."""


class NodeResult(BaseModel):
    """What a node step leaves: the node's work, the session's changes, what it streamed."""

    model_config = ConfigDict(frozen=True)
    state: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Its outputs, suspension, requests and the run's entered calls (`encode_state`)."""
    outbox: list[tuple[str | int, dict[str, Any]]] = Field(
        default_factory=list[tuple[str | int, dict[str, Any]]]
    )
    """What it sent: to a node by id, or to a fan-in by index; messages encoded."""
    produced: dict[str, Any] | None = None
    """The messages its agents produced (encoded)."""
    changed: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Session keys it set, with their values."""
    removed: list[str] = Field(default_factory=list[str])
    """Session keys it removed."""
    input_tokens: int = 0
    """Input tokens of the agents it ran."""
    output_tokens: int = 0
    """Output tokens of those agents."""
    spent: tuple[int, int] = (0, 0)
    """The model calls and tokens it spent against the run's budget."""
    asked: list[str] = Field(default_factory=list[str])
    """Ids of the requests streamed in it, in stream order."""
    items: list[AgentUpdate] = Field(default_factory=list[AgentUpdate])
    """What it streamed, tokens left out."""
    delivered: bool = False
    """Whether `items` already reached the run's reader (in the worker that ran the step)."""
    failed: FailedEnvelope | None = None
    """Set when the node failed."""


def workflow_at(agent: IAgent, path: AgentPath) -> Workflow | None:
    """The workflow the workflow agent at `path` of `agent`'s tree runs, or None when the
    path names no workflow agent (a workflow run by code inside a node, say)."""
    found: IAgent | None = agent if path and path[0] == agent.id else None
    for agent_id in path[1:]:
        if found is None:
            return None
        found = found.get_subagent(agent_id)
    return found.workflow if isinstance(found, WorkflowAgent) else None


def spec_of(runner: Runner, job: Job, root: str, parent: str) -> NodeSpec:
    """The node step of `job`, a job of a superstep of `runner` (which runs as an agent).

    Raises:
        CheckpointValueError: naming the node whose message, answer or suspension has no JSON
            form (a node step carries them as a checkpoint does).
    """
    context = runner.agent_context
    assert context is not None
    node, messages, superstep, ordinal, resumed = job
    state = runner.state
    carried = RunState(
        superstep,
        {node: messages},
        {} if resumed is None else {node: resumed},
        answers=state.answers,
        errors=state.errors,
        entered=state.entered,
    )
    return NodeSpec(
        root=root,
        parent=parent,
        path=list(context.path),
        place=list(context.place),
        call=context.call,
        node=node,
        superstep=superstep,
        ordinal=ordinal,
        state=encode_state(carried),
        answers=encode(context.turn.answers, "the answers of the turn"),
        errors=sorted(context.turn.errors),
        session=runner.session.to_json(),
        options=context.options.model_dump_json(),
        spent=(0, 0) if context.budget is None else (context.budget.rounds, context.budget.tokens),
    )


async def run_node_step(agent: IAgent, spec: NodeSpec, turn: Turn, emit: Emit) -> NodeResult:
    """Run the node of `spec` here, on the agent tree `agent` (every worker builds it alike):
    `turn.durable` records its calls as steps, `emit` gets what it streams.

    Raises:
        DurableRunError: when this worker's tree has no workflow agent at the spec's path.
    """
    path = tuple(spec.path)
    workflow = workflow_at(agent, path)
    if workflow is None:
        raise DurableRunError(
            f"no workflow agent at {'/'.join(path)!r} in this worker's agent tree: build the "
            "same agents in every worker before DBOS.launch()",
            path=path,
        )
    workflow.declare_models()
    session = Session.from_json(spec.session)
    before = session.snapshot()
    options = RunOptions.model_validate_json(spec.options)
    turn.answers.update(cast(dict[str, Any], decode(spec.answers)))
    turn.errors.update(spec.errors)
    budget = options.budget
    tracker: BudgetTracker | None = None
    if budget is not None:
        tracker = BudgetTracker(budget)
        tracker.rounds, tracker.tokens = spec.spent
    context = RunContext(
        path,
        session,
        options,
        emit,
        tracker,
        turn,
        spec.call,
        tuple(spec.place),
    )
    carried = decode_state(spec.state)
    sink = AgentSink(context)
    state = RunState(
        spec.superstep + 1,
        answers=carried.answers,
        errors=carried.errors,
        entered=carried.entered,
    )
    runner = Runner(
        workflow,
        state,
        sink,
        session,
        scope=path,
        agent_context=context,
        call=spec.call,
        reports=sink,
    )
    node = spec.node
    work = await runner.run_node(
        node,
        carried.pending.get(node, []),
        spec.superstep,
        spec.ordinal,
        carried.suspended.get(node),
    )
    failed: FailedEnvelope | None = None
    if runner.failure is not None:
        failed = error_of(runner.failure[1], path)
    after = session.snapshot()
    left = RunState(
        requests=work.requests,
        suspended={} if work.suspension is None else {node: work.suspension},
        outputs=work.outputs,
        entered=state.entered,
    )
    return NodeResult(
        state=encode_state(left),
        outbox=[
            (
                target if isinstance(target, str) else target.index,
                encode(message, f"a message node {node!r} sent", node),
            )
            for target, message in work.outbox
        ],
        produced=encode(work.produced, f"the messages node {node!r} produced", node),
        changed={k: v for k, v in after.items() if k not in before or before[k] != v},
        removed=[k for k in before if k not in after],
        input_tokens=runner.input_tokens,
        output_tokens=runner.output_tokens,
        spent=(0, 0)
        if tracker is None
        else (tracker.rounds - spec.spent[0], tracker.tokens - spec.spent[1]),
        asked=list(turn.asked),
        failed=failed,
    )


def error_of(error: BaseException, path: AgentPath) -> FailedEnvelope:
    """How a failure with `error` is recorded (an `AgentError` with its own path and plain
    attributes, any other exception at `path`)."""
    if isinstance(error, AgentError):
        fields = {
            k: v
            for k, v in vars(error).items()
            if k not in ("message", "path") and (v is None or isinstance(v, str | int | float))
        }
        return FailedEnvelope(
            error=type(error).__name__, message=error.message, path=error.path, fields=fields
        )
    return FailedEnvelope(error=type(error).__name__, message=str(error), path=path)


def error_from(failed: FailedEnvelope) -> AgentError | None:
    """The `raf.errors` exception `failed` records (a subclass of `AgentError`), made again
    as its own type with its message, path and plain attributes; None for another.

    Example:
        >>> error_from(FailedEnvelope(error="RunTimeout", message="late", path=("a",)))
        RunTimeout('late')
        >>> error_from(FailedEnvelope(error="ValueError", message="no")) is None
        True
    """
    kind = getattr(errors, failed.error, None)
    if not (isinstance(kind, type) and issubclass(kind, AgentError)) or kind is AgentError:
        return None
    error = kind.__new__(kind)
    AgentError.__init__(error, failed.message, path=failed.path)
    for key, value in failed.fields.items():
        setattr(error, key, value)
    return error


def apply_result(runner: Runner, job: Job, result: NodeResult) -> NodeWork:
    """Put node step `result` of `job` back into `runner`: the session's changes, the run's
    entered calls and usage; the node's work returned for the superstep to deliver."""
    node, messages, superstep, ordinal, resumed = job
    work = NodeWork(runner, node, messages, superstep, ordinal, resumed)
    session = runner.session
    session.merge(result.changed)
    for key in result.removed:
        session.pop(key)
    runner.input_tokens += result.input_tokens
    runner.output_tokens += result.output_tokens
    context = runner.agent_context
    if context is not None:
        context.turn.asked.extend(result.asked)
        tracker = context.budget
        if tracker is not None:  # the run's budget counts what every node step spent
            tracker.rounds += result.spent[0]
            tracker.tokens += result.spent[1]
    left = decode_state(result.state) if result.state else RunState()  # none: failed early
    runner.state.entered.update(left.entered)
    work.outputs = left.outputs
    work.requests = left.requests
    work.suspension = left.suspended.get(node)
    if result.produced is not None:
        work.produced = cast(list[Any], decode(result.produced))
    fan_ins = {route.index: route for route in runner.routes[node] if isinstance(route, FanIn)}
    work.outbox = [
        (target if isinstance(target, str) else fan_ins[target], decode(message))
        for target, message in result.outbox
    ]
    if result.failed is not None and runner.failure is None:
        failed = result.failed
        error = error_from(failed) or DurableRunError(
            f"{failed.error}: {failed.message}", path=failed.path
        )
        runner.fail(node, error)
    return work
