"""`WorkflowAgent`: a workflow as an `IAgent`, mapping engine events onto the agent stream.

| engine                 | agent stream                                                   |
|------------------------|----------------------------------------------------------------|
| `NodeInvoking`         | `ExecutorInvoking(executor_id)`                                |
| `NodeStreaming(item)`  | the item, its path prefixed with the workflow agent's path     |
| `NodeCompleted`        | `ExecutorInvoked(executor_id, messages, value)`                |
| `NodeFailed`, `WorkflowError` | raises `raf.errors.WorkflowError` (an `AgentError` from a node propagates as itself) |
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
    RequestInfo,
    SuperstepCompleted,
    WorkflowError,
    WorkflowEvent,
)
from raf.engine.runner import Runner
from raf.engine.state import RunState
from raf.engine.waiting import ENGINE_ROOT, RESPONSES, answers_from, kept_state, requests_of
from raf.errors import AgentError
from raf.errors import WorkflowError as WorkflowFailure
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
            pending = [request_id for request_id, _ in requests_of(kept)]
            answers = answers_from(messages, pending)
            previous: dict[str, Any] = ctx.extras.get(RESPONSES) or {}
            ctx.extras[RESPONSES] = {**previous, **answers}
        return await super().invoke_turn(messages, ctx)

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        """Run the workflow on the conversation (or resume it when it waits)."""
        session = ctx.session
        key = ctx.key("pending")
        kept = session.get(key)
        if kept is None:
            state = RunState.start(self._workflow.start_id, messages)
        else:
            session.pop(key)
            state = decode_state(kept["state"])
            state.answer(ctx.extras.get(RESPONSES) or {})
        root = ENGINE_ROOT not in ctx.extras
        if root:
            ctx.extras[ENGINE_ROOT] = True
        sink = _AgentSink(ctx)
        runner = Runner(
            self._workflow,
            state,
            sink,
            session,
            scope=ctx.path,
            agent_context=ctx,
            checkpoints=root,
        )
        status = await runner.execute()
        if status == "failed":
            raise sink.failure()
        if status == "waiting":
            session.set(key, kept_state(state))
        usage = Usage(input_tokens=sink.input_tokens, output_tokens=sink.output_tokens)
        return _response(state, usage)


class _AgentSink:
    """Maps engine events onto the agent's stream and collects the response."""

    __slots__ = ("emit", "error", "error_node", "input_tokens", "output_tokens", "path")

    def __init__(self, ctx: RunContext) -> None:
        self.emit = ctx.emit
        self.path = ctx.path
        self.input_tokens = 0
        self.output_tokens = 0
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
        elif kind is NodeStreaming:
            assert isinstance(event, NodeStreaming)
            update = event.update
            await self.emit(update.model_copy(update={"path": self.path + update.path}))
        elif kind is RequestInfo:
            assert isinstance(event, RequestInfo)
            await self.emit(
                RequestInfoUpdate(
                    request_id=event.request_id, payload=event.payload, path=self.path
                )
            )
        elif kind is NodeFailed or kind is WorkflowError:
            assert isinstance(event, NodeFailed | WorkflowError)
            if self.error is None:
                self.error = event.error
                self.error_node = event.node_id

    async def _completed(self, event: NodeCompleted) -> None:
        output = event.output
        if type(output) is AgentResponse or isinstance(output, AgentResponse):
            usage = output.usage
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
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
        failure = WorkflowFailure(node, error, path=self.path)
        failure.__cause__ = error
        return failure


_ONLY_MESSAGES = {ChatMessage}


def _response(state: RunState, usage: Usage) -> AgentResponse:
    """The turn's response: outputs that are messages become messages, others the value."""
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
    if type(value) is not list or not value:
        return False
    return set(map(type, cast(list[Any], value))) == _ONLY_MESSAGES
