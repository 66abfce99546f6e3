"""`WorkflowAgent`: a workflow as an `IAgent`, mapping engine events onto the agent stream.

| engine                 | agent stream                                                   |
|------------------------|----------------------------------------------------------------|
| `NodeInvoking`         | `ExecutorInvoking(executor_id)`                                |
| `NodeStreaming(item)`  | the item, its path prefixed with the workflow agent's path     |
| `NodeCompleted`        | `ExecutorInvoked(executor_id, messages, value)`                |
| `NodeFailed`, `WorkflowFailed` | raises `raf.errors.WorkflowError` (an `AgentError` from a node propagates as itself) |
| `WorkflowOutput`       | the response's messages (`ChatMessage` / list / `AgentResponse`) or value |
| `RequestInfo`          | `RequestInfoUpdate(request_id, payload)`; the run ends waiting  |

The engine reports straight into the run's `emit` (no stream in between), and agents inside
nodes emit their items with their full path already, so nesting adds no copy per item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeGuard, cast

from raf.agent import AgentMetadata, BaseAgent, IAgent
from raf.engine.checkpointing import decode_state
from raf.engine.events import (
    NodeCompleted,
    NodeFailed,
    NodeInvoking,
    NodeStreaming,
    NodeWaiting,
    RequestInfo,
    SuperstepCompleted,
    WorkflowEvent,
    WorkflowFailed,
)
from raf.engine.runner import NestedRun, Runner
from raf.engine.state import RunState
from raf.engine.waiting import (
    CHECKPOINTER,
    ENGINE_ROOT,
    RESPONSES,
    answers_from,
    drop_running,
    kept_state,
    open_requests,
    saved_running,
)
from raf.errors import AgentError, WorkflowError
from raf.messages import ChatMessage
from raf.run import RunContext
from raf.updates import (
    AgentResponse,
    ExecutorInvoked,
    ExecutorInvoking,
    RequestInfoUpdate,
    Usage,
)

if TYPE_CHECKING:
    from raf.engine.workflow import Workflow

__all__ = ["WorkflowAgent"]


class WorkflowAgent(BaseAgent):
    """A `Workflow` run as an agent; its children are the agents of its `AgentExecutor` nodes.

    The conversation (history plus the new messages) goes to the start node. While the run
    waits for a human, its state is kept in the session; the next `run()` on that session
    answers the pending requests (a user message answers the oldest; a tool message whose
    `ToolResultContent.call_id` is a request id answers that one with its JSON) and resumes.
    When the run's root checkpoints, a nested workflow agent keeps its state in the session
    after each of its supersteps and has the root save a checkpoint, so a resume continues
    inside it.

    Args:
        workflow: the workflow.
        id: the agent id (the workflow's id by default).
        name: display name.
        description: what it does.
        kind: the metadata kind (`graph`, or the builder's pattern name).

    Example:
        >>> import anyio
        >>> from raf.engine import WorkflowBuilder
        >>> from raf.function_agent import FunctionAgent
        >>> upper = FunctionAgent("upper", lambda m: m[-1].text.upper())
        >>> workflow = WorkflowBuilder("w").add_executor(upper).set_start(upper).build()
        >>> agent = workflow.as_agent()
        >>> [a.id for a in agent.subagents()]
        ['upper']
    """

    def __init__(
        self,
        workflow: Workflow,
        id: str | None = None,
        *,
        name: str | None = None,
        description: str = "",
        kind: str = "graph",
    ) -> None:
        super().__init__(id if id is not None else workflow.id, name=name, description=description)
        self._workflow = workflow
        self._kind = kind
        children: list[IAgent] = []
        for executor in workflow.executors.values():
            agent = executor.as_agent()
            if agent is not None and not any(agent is known for known in children):
                children.append(agent)
        self._children = tuple(children)

    @property
    def workflow(self) -> Workflow:
        """The workflow this agent runs."""
        return self._workflow

    @property
    def metadata(self) -> AgentMetadata:
        """Id, name, description, kind, children and output schema."""
        return AgentMetadata(
            id=self.id,
            name=self._name,
            description=self.description,
            kind=self._kind,
            children=tuple(child.id for child in self._children),
            output_schema=self.output_schema(),
        )

    def subagents(self) -> Sequence[IAgent]:
        """The agents of the `AgentExecutor` nodes, in node order."""
        return self._children

    async def invoke_turn(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        """One turn as the root of a run: the new messages answer pending requests first."""
        kept = ctx.session.get(ctx.key("pending"))
        if kept is not None:
            answers = answers_from(messages, open_requests(kept))
            previous: dict[str, Any] = ctx.extras.get(RESPONSES) or {}
            ctx.extras[RESPONSES] = {**previous, **answers}
        return await super().invoke_turn(messages, ctx)

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        """Run the workflow on the conversation (or resume it when it waits)."""
        session = ctx.session
        extras = ctx.extras
        key = ctx.key("pending")
        kept = session.get(key)
        root = ENGINE_ROOT not in extras
        nested = None if root else self._nested(ctx)
        # A resume that re-runs the parent's superstep continues this call where it was.
        state = None if nested is None else self._continued(nested, ctx)
        if state is None:
            if kept is None:
                state = RunState.start(self._workflow.start_id, messages)
            else:
                # Read, not popped: a turn that fails or is cancelled leaves the run waiting.
                state = decode_state(kept["state"])
                state.answer(extras.get(RESPONSES) or {})
        if root:
            extras[ENGINE_ROOT] = True
        sink = _AgentSink(ctx)
        runner = Runner(
            self._workflow,
            state,
            sink,
            session,
            scope=ctx.path,
            agent_context=ctx,
            checkpoints=root,
            nested=nested,
        )
        if nested is None:
            status = await runner.execute()
        else:
            try:
                status = await runner.execute()
            finally:
                drop_running(session, nested.key, call=nested.call)
        if status == "failed":
            raise sink.failure()
        if status == "waiting":
            session.set(key, kept_state(state))
        elif kept is not None:
            session.pop(key)
        usage = Usage(input_tokens=runner.input_tokens, output_tokens=runner.output_tokens)
        response = _response(state, usage)
        if status != "waiting":
            return response
        pending = [
            RequestInfoUpdate(
                request_id=r.request_id,
                payload=r.payload,
                path=tuple(r.request_id.split("/")[:-1]),
            )
            for r in state.requests
            if r.request_id not in state.answers
        ]
        return response.model_copy(update={"status": "waiting", "pending": pending})

    @staticmethod
    def _nested(ctx: RunContext) -> NestedRun | None:
        """Where this run keeps its state between supersteps, when its root checkpoints and
        a node of a parent workflow runs it."""
        checkpointer: Runner | None = ctx.extras.get(CHECKPOINTER)
        if checkpointer is None:
            return None
        path = "/".join(ctx.path)
        call = checkpointer.calls.get(path)
        if call is None:
            return None
        return NestedRun(path + "#running", call, checkpointer)

    def _continued(self, nested: NestedRun, ctx: RunContext) -> RunState | None:
        graph = self._workflow.fingerprint
        return saved_running(ctx.session, nested.key, call=nested.call, graph=graph)


class _AgentSink:
    """Maps engine events onto the agent's stream and collects the response."""

    __slots__ = ("emit", "error", "error_node", "path")

    def __init__(self, ctx: RunContext) -> None:
        self.emit = ctx.emit
        self.path = ctx.path
        self.error: BaseException | None = None
        self.error_node: str | None = None

    async def __call__(self, event: WorkflowEvent) -> None:
        kind = type(event)
        if kind is NodeInvoking:
            assert isinstance(event, NodeInvoking)
            await self.emit(ExecutorInvoking(executor_id=event.node_id, path=self.path))
        elif kind is NodeCompleted:
            assert isinstance(event, NodeCompleted)
            await self._completed(event)
        elif kind is SuperstepCompleted:
            return
        elif kind is NodeWaiting:
            assert isinstance(event, NodeWaiting)
            await self.emit(
                ExecutorInvoked(executor_id=event.node_id, status="waiting", path=self.path)
            )
        elif kind is NodeStreaming:
            assert isinstance(event, NodeStreaming)
            update = event.update
            await self.emit(update.model_copy(update={"path": self.path + update.path}))
        elif kind is RequestInfo:
            assert isinstance(event, RequestInfo)
            request_id = event.request_id
            # The path of the workflow that asked (a nested one's, when reported again here).
            path = tuple(request_id.split("/")[:-1])
            await self.emit(
                RequestInfoUpdate(request_id=request_id, payload=event.payload, path=path)
            )
        elif kind is NodeFailed or kind is WorkflowFailed:
            assert isinstance(event, NodeFailed | WorkflowFailed)
            if self.error is None:
                self.error = event.error
                self.error_node = event.node_id

    async def _completed(self, event: NodeCompleted) -> None:
        output = event.output
        if type(output) is AgentResponse or isinstance(output, AgentResponse):
            item = ExecutorInvoked(
                executor_id=event.node_id,
                messages=output.messages,
                value=output.value,
                path=self.path,
            )
        elif _is_messages(output):
            item = ExecutorInvoked(
                executor_id=event.node_id, messages=output, value=None, path=self.path
            )
        else:
            item = ExecutorInvoked(
                executor_id=event.node_id, messages=[], value=output, path=self.path
            )
        await self.emit(item)

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


_ONLY_MESSAGES = {ChatMessage}


def _response(state: RunState, usage: Usage) -> AgentResponse:
    """The turn's response: outputs that are messages become messages, the last other one the
    value (an empty list adds no messages and leaves the value as it was)."""
    messages: list[ChatMessage] = []
    value: Any = None
    for _, output in state.outputs:
        if isinstance(output, ChatMessage):
            messages.append(output)
        elif isinstance(output, AgentResponse):
            messages.extend(output.messages)
            if output.value is not None:
                value = output.value
        elif _is_messages(output):
            messages.extend(output)
        else:
            value = output
    return AgentResponse(messages=messages, usage=usage, value=value)


def _is_messages(value: Any) -> TypeGuard[list[ChatMessage]]:
    """True for a list of messages; `[]` too, so an empty conversation is no value."""
    if type(value) is not list:
        return False
    return not value or set(map(type, cast(list[Any], value))) == _ONLY_MESSAGES
