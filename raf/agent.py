"""The `IAgent` protocol and what comes with it: metadata, options, sessions, runs.

Every agent in raf (a ReAct leaf, a `FunctionAgent`, a whole workflow) is an `IAgent`.
`BaseAgent` is the shared implementation: subclasses write `invoke()`, and nest inside other
raf agents without an extra stream per level.

Example:
    >>> import anyio
    >>> from raf import FunctionAgent, IAgent
    >>> shout = FunctionAgent("shout", lambda messages: messages[-1].text.upper())
    >>> isinstance(shout, IAgent)
    True
    >>> anyio.run(lambda: shout.run("hey").collect()).text
    'HEY'
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, cast, runtime_checkable

import anyio
from pydantic import BaseModel, ConfigDict, Field, field_validator

from raf._defaults import new_dict
from raf._options import Options
from raf._origins import MessageOrigins
from raf._session_turns import kept_turn
from raf._single_writer import OnBusy, claim_session
from raf.budget import Budget, BudgetTracker
from raf.errors import AgentError, BudgetExceeded, RunTimeout, UnknownRequest
from raf.messages import ChatMessage, MessagesInput, as_messages, message_list_adapter
from raf.run import AgentRun as AgentRun
from raf.run import Emit, RunContext
from raf.session import Session as Session
from raf.session import checked_session
from raf.traced import telemetry_at_start as active_telemetry
from raf.updates import (
    AgentPath,
    AgentResponse,
    AgentUpdate,
    MessageCompleted,
    RequestInfoUpdate,
    Usage,
    ValueT,
)

__all__ = [
    "AgentMetadata",
    "AgentRun",
    "BaseAgent",
    "IAgent",
    "RunOptions",
    "Session",
    "invoke_agent",
]

if TYPE_CHECKING:
    from raf._tool_data import ToolDefinition

    ClientTools = tuple[ToolDefinition, ...]
else:  # checked by `RunOptions` itself: its module loads only when a run is given some
    ClientTools = tuple[Any, ...]

_ID = re.compile(r"^[^/#\s\x00][^/#\x00]*$")


class AgentMetadata(BaseModel):
    """What an agent says about itself; `children` are its direct subagents' ids."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str
    """Unique among siblings; a path segment."""
    name: str
    """Display name (the id unless given)."""
    description: str = ""
    """What the agent does, for people and for routing models."""
    kind: str
    """react, function, sequential, concurrent, handoff, group_chat, magentic, vote, graph, roles…"""
    children: tuple[str, ...] = ()
    """Ids of the direct subagents, in participant order."""
    output_schema: dict[str, Any] | None = None
    """JSON schema of the structured value, when the agent has one."""


class RunOptions(Options):
    """Options of one run.

    Example:
        >>> RunOptions(max_rounds=3, timeout=30).timeout
        30.0
    """

    max_rounds: int | None = Field(default=None, ge=1)
    """Model calls allowed to each ReAct loop (overrides the agent's own `max_rounds`)."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds before the run ends with `RunTimeout`."""
    budget: Budget | None = None
    """Limits on the whole tree's tokens, model calls and seconds."""
    metadata: dict[str, Any] = Field(default_factory=new_dict)
    """Free-form data for your own agents and tools; each run gets its own copy."""
    on_busy: OnBusy = "reject"
    """What a run does when another top-level run of its session is in progress (in this
    process, or in another sharing its store): raise `SessionBusy` (`reject`), or queue behind
    it, first come first served (`wait`)."""
    client_tools: ClientTools = ()
    """Tools the caller of the run executes itself (an AG-UI client's frontend tools): every
    `ReactAgent` in the tree offers them to its model besides its own, and a call of one ends
    the agent's turn waiting on a request: its id is the agent's path and the model's call id
    (`"guide/call_1"`), its payload `{"client_tool": name, "call_id": ..., "arguments": ...}`.
    The next run answers it with `ToolResultContent(call_id=<request id>, result=...)`, which
    the model sees as the tool's result (see `raf.react.client_calls`). A client tool named
    like one of an agent's own tools is a `ToolError`.

    Example:
        >>> from raf.tools import ToolDefinition
        >>> show = ToolDefinition(name="show_map", description="Show a place on the map.")
        >>> [t.name for t in RunOptions(client_tools=[show]).client_tools]
        ['show_map']
    """

    @field_validator("client_tools", mode="after")
    @classmethod
    def _tool_definitions(cls, tools: tuple[Any, ...]) -> tuple[Any, ...]:
        from raf._tool_data import ToolDefinition  # only when a run is given some

        return tuple(ToolDefinition.model_validate(t) for t in tools)


def default_options() -> RunOptions:
    """A new `RunOptions()`, for a run given none (never shared: its metadata is the run's)."""
    return RunOptions()


def time_limit(options: RunOptions) -> float | None:
    """The seconds a turn of a run with `options` may take: the lower of `timeout` and
    `Budget(seconds=...)` (None: no limit).

    Example:
        >>> time_limit(RunOptions(timeout=30, budget=Budget(seconds=10)))
        10.0
    """
    seconds = options.budget.seconds if options.budget is not None else None
    limits = [t for t in (options.timeout, seconds) if t is not None]
    return min(limits) if limits else None


def out_of_time(options: RunOptions, path: AgentPath) -> AgentError:
    """The error a turn that took `time_limit(options)` ends with: `BudgetExceeded` when the
    time budget is the lower limit, else `RunTimeout`.

    Example:
        >>> out_of_time(RunOptions(timeout=30), ("a",))
        RunTimeout('run did not finish within 30.0s; raise RunOptions.timeout')
    """
    limit = time_limit(options)
    seconds = options.budget.seconds if options.budget is not None else None
    if seconds is not None and seconds == limit:
        return BudgetExceeded(
            f"the run's time budget of {seconds}s is spent; raise Budget(seconds=...) "
            "in RunOptions",
            kind="seconds",
            limit=seconds,
            used=seconds,
            path=path,
        )
    return RunTimeout(f"run did not finish within {limit}s; raise RunOptions.timeout", path=path)


def options_of_run(options: RunOptions | None) -> RunOptions:
    """The options one run uses: `options` with a metadata dict of the run's own."""
    if options is None:
        return RunOptions()
    if not isinstance(options, RunOptions):  # pyright: ignore[reportUnnecessaryIsInstance]
        fields = (
            ", ".join(f"{k}={v!r}" for k, v in options.items()) if isinstance(options, dict) else ""
        )
        raise TypeError(
            f"options is a RunOptions, not {type(options).__name__}: pass "
            f"RunOptions({fields or 'timeout=30'})"
        )
    return options.model_copy(update={"metadata": dict(options.metadata)})


@runtime_checkable
class IAgent(Protocol):
    """The one interface of every agent and workflow in raf."""

    @property
    def id(self) -> str:
        """Unique among siblings."""
        ...

    @property
    def metadata(self) -> AgentMetadata:
        """Id, name, description, kind, children, output schema."""
        ...

    def get_subagent(self, agent_id: str) -> IAgent | None:
        """The direct child `agent_id`, or None."""
        ...

    def run(
        self,
        messages: MessagesInput,
        session: Session | None = None,
        options: RunOptions | None = None,
    ) -> AgentRun[Any]:
        """Start a run; `async with` the result to stream it, or `await` it for the response.

        An agent may say more about the value: `ReactAgent(..., output_schema=Plan).run()`
        is an `AgentRun[Plan]`, which is an `AgentRun[Any]` too.
        """
        ...

    async def reset(self) -> None:
        """Forget every session and cache of this agent and all its descendants."""
        ...


def check_agent_id(agent_id: str) -> str:
    """Validate an agent id (a non-empty path segment: no `/`, no `#`).

    Raises:
        TypeError: when the id is not a str, naming its type.
        ValueError: naming the bad id.
    """
    if not isinstance(agent_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(
            f"agent id must be a str, not {type(agent_id).__name__} ({agent_id!r}); pass a "
            f"name such as id={str(agent_id)!r}"
        )
    if not _ID.match(agent_id) or not _encodes(agent_id):
        raise ValueError(
            f"agent id {agent_id!r} is not usable: ids are non-empty, without '/', '#' or NUL, "
            "do not start with whitespace, and hold no lone surrogate"
        )
    return agent_id


def _encodes(text: str) -> bool:
    """Whether `text` is valid Unicode (no lone surrogate), as JSON in UTF-8 needs."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


class BaseAgent(ABC, Generic[ValueT]):
    """Shared implementation of `IAgent`; subclasses implement `invoke`.

    `run()` starts a run rooted at this agent; `invoke()` does the work inside any run, with a
    `RunContext` saying where the agent sits and where its updates go. When this agent is the
    root of a run it keeps the conversation in the session, so consecutive runs continue it;
    nested agents get the conversation from their parent.

    Generic in the type of its responses' value (`BaseAgent` alone is `BaseAgent[Any]`): a
    subclass whose `invoke` returns `AgentResponse[Plan]` subclasses `BaseAgent[Plan]`, and its
    runs are `AgentRun[Plan]`.
    """

    kind: ClassVar[str] = "agent"

    def __init__(self, id: str, *, name: str | None = None, description: str = "") -> None:
        self._id = check_agent_id(id)
        self._name = name or id
        self._description = description
        self._default_session = Session()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self._id!r})"

    @property
    def id(self) -> str:
        """Unique among siblings."""
        return self._id

    @property
    def description(self) -> str:
        """What the agent does."""
        return self._description

    @property
    def metadata(self) -> AgentMetadata:
        """Id, name, description, kind, children and output schema."""
        return AgentMetadata(
            id=self._id,
            name=self._name,
            description=self._description,
            kind=self.kind,
            children=tuple(c.id for c in self.subagents()),
            output_schema=self.output_schema(),
        )

    def subagents(self) -> Sequence[IAgent]:
        """The direct children, in participant order."""
        return ()

    def output_schema(self) -> dict[str, Any] | None:
        """JSON schema of the structured value, if any."""
        return None

    def get_subagent(self, agent_id: str) -> IAgent | None:
        """The direct child `agent_id`, or None."""
        for child in self.subagents():
            if child.id == agent_id:
                return child
        return None

    async def reset(self) -> None:
        """Forget the default session and every cache, here and in all descendants."""
        self._default_session = Session()
        for child in self.subagents():
            await child.reset()

    def run(
        self,
        messages: MessagesInput,
        session: Session | None = None,
        options: RunOptions | None = None,
    ) -> AgentRun[ValueT]:
        """Start a run of this agent; see `IAgent.run`."""
        new_messages = as_messages(messages)
        run_session = self._default_session if session is None else checked_session(session)
        run_options = options_of_run(options)

        async def body(emit: Emit) -> AgentResponse[ValueT]:
            budget = run_options.budget
            ctx = RunContext(
                (self._id,),
                run_session,
                run_options,
                emit,
                BudgetTracker(budget) if budget is not None else None,
            )
            telemetry = ctx.turn.telemetry = active_telemetry()
            if telemetry is not None:
                return await telemetry.run(self, ctx.path, run_session, new_messages, bounded(ctx))
            return await bounded(ctx)

        async def bounded(ctx: RunContext) -> AgentResponse[ValueT]:
            limit = time_limit(run_options)
            if limit is None:
                return await self.invoke_turn(new_messages, ctx)
            # move_on_after, not fail_after: a TimeoutError of the agent's own stays its own.
            with anyio.move_on_after(limit):
                return await self.invoke_turn(new_messages, ctx)
            raise out_of_time(run_options, ctx.path)

        async def attributed(emit: Emit) -> AgentResponse[ValueT]:
            origins = MessageOrigins()  # the response says which agent said what

            async def work() -> AgentResponse[ValueT]:
                return origins.attributed(await body(origins.watching(emit)))

            return await kept_turn(run_session, self._id, work)

        wait = run_options.on_busy == "wait"
        return AgentRun(
            attributed, partial(claim_session, run_session, wait=wait, path=(self._id,))
        )

    async def invoke_turn(
        self, messages: list[ChatMessage], ctx: RunContext
    ) -> AgentResponse[ValueT]:
        """Run one turn as the root of a run: prepend the session's history, then save it."""
        key = ctx.key("history")
        history = ctx.session.get_as(key, message_list_adapter)
        conversation = [*history, *messages] if history else messages
        refuse_stray_results(messages, conversation, [], ctx.path)
        response = await self.invoke(conversation, ctx)
        ctx.session.set(key, [*conversation, *response.messages])
        return response

    @abstractmethod
    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse[ValueT]:
        """Do the work for `messages` (the whole conversation), emitting through `ctx.emit`."""


def refuse_stray_results(
    messages: Sequence[ChatMessage],
    conversation: Sequence[ChatMessage],
    pending: Sequence[str],
    path: AgentPath,
) -> None:
    """Refuse a tool result in a turn's new `messages` that answers neither a `pending`
    request nor a tool call of `conversation` (a model's API rejects such a `tool` message on
    every later request, so it must never enter the history).

    Raises:
        UnknownRequest: naming the id and the pending requests.
    """
    results = [c for m in messages for c in m.contents if c.type == "tool_result"]
    if not results:
        return
    known = {*pending, *(call.call_id for m in conversation for call in m.tool_calls)}
    for result in results:
        if result.call_id not in known:
            raise UnknownRequest(result.call_id, list(pending), path=path)


async def invoke_agent(
    agent: IAgent,
    messages: list[ChatMessage],
    ctx: RunContext,
    *,
    call: str | None = None,
    session: Session | None = None,
) -> AgentResponse:
    """Run `agent` as a child of the agent whose context is `ctx`, forwarding its stream.

    raf agents run in place (`call` names the workflow node's call that runs it); any other
    `IAgent` runs through its public `run()` (see `invoke_foreign`).
    """
    if isinstance(agent, BaseAgent):
        # isinstance cannot tell the value type: say it is any.
        return await invoke_in_place(cast("BaseAgent[Any]", agent), messages, ctx, call)
    return await invoke_foreign(agent, messages, ctx, session)


async def invoke_in_place(
    agent: BaseAgent,
    messages: list[ChatMessage],
    ctx: RunContext,
    call: str | None = None,
    place: AgentPath | None = None,
) -> AgentResponse:
    """Run raf's `agent` in place as a child of the agent whose context is `ctx` (at `place`,
    see `RunContext`)."""
    child = ctx.child(agent.id, call, place)
    telemetry = ctx.turn.telemetry
    try:
        if telemetry is None:
            return await agent.invoke(messages, child)
        work = agent.invoke(messages, child)
        return await telemetry.agent(agent, child.path, ctx.session, messages, work)
    except AgentError as exc:
        exc.with_path(child.path)
        raise


async def invoke_foreign(
    agent: IAgent,
    messages: list[ChatMessage],
    ctx: RunContext,
    session: Session | None = None,
    *,
    asks: AgentPath | None = None,
) -> AgentResponse:
    """Run an `IAgent` that is not raf's through its public `run()` on `session` (see
    `_run_foreign`), in its own span when the run is traced."""
    work = _run_foreign(agent, messages, ctx, session, asks=asks)
    telemetry = ctx.turn.telemetry
    if telemetry is None:
        return await work
    path = (*ctx.path, agent.id)
    return await telemetry.agent(agent, path, ctx.session, messages, work)


async def _run_foreign(
    agent: IAgent,
    messages: list[ChatMessage],
    ctx: RunContext,
    session: Session | None = None,
    *,
    asks: AgentPath | None = None,
) -> AgentResponse:
    """Run an `IAgent` that is not raf's through its public `run()` on `session`.

    A fresh session by default: the parent passes it the whole conversation. Its items are
    re-attributed under `ctx.path` and its request ids prefixed with that path, so they stay
    unique in the whole tree. It gets what is left of the run's budget, and each `Usage` item
    it streams is charged to the run as one model call and its tokens; its errors get full
    paths. When it streams a request for a human, its response is `waiting` with those
    requests pending.
    """
    child_path = (*ctx.path, agent.id)
    prefix = ctx.path
    asks = ctx.place if asks is None else asks
    emit = ctx.emit
    tracker = ctx.budget
    finals: list[ChatMessage] = []
    asked: list[RequestInfoUpdate] = []
    usage = Usage()
    options = ctx.options if tracker is None else _with_budget_left(ctx.options, tracker)
    run = agent.run(messages, session or Session(store=ctx.session.store), options)
    rounds = 0  # usage items charged to the run, one model call each (tokens: `usage`)
    crossed: BudgetExceeded | None = None
    try:
        async with run as stream:
            async for update in stream:
                if update.type == "request_info":
                    rebased = rebase_request(update, prefix, asks)
                    asked.append(rebased)
                    ctx.turn.asked.append(rebased.request_id)
                    await emit(rebased)
                    continue
                if update.type == "message_completed" and update.path == (agent.id,):
                    finals.append(update.message)
                elif update.type == "usage":
                    usage = usage + update
                await emit(_rebase(update, prefix))
                if tracker is not None and update.type == "usage":
                    # An agent that ignores RunOptions.budget is still held to it here.
                    rounds += 1
                    try:
                        tracker.charge_round(prefix + update.path)
                        tracker.charge_tokens(update.total_tokens, prefix + update.path)
                    except BudgetExceeded as exc:
                        crossed = exc
                        break
    except BudgetExceeded as exc:
        path = prefix + exc.path if exc.path else child_path
        if tracker is None or exc.kind == "seconds":
            exc.path = path
            raise
        # It honoured what was left of the budget: report it against the whole budget,
        # counting what its own tracker saw beyond the usage items charged above.
        if exc.kind == "rounds":
            tracker.rounds += max(0, int(exc.used) - rounds)
            raise tracker.exceeded("rounds", path) from exc
        tracker.tokens += max(0, int(exc.used) - usage.total_tokens)
        raise tracker.exceeded("tokens", path) from exc
    except AgentError as exc:
        # The agent's own run names paths from itself; the stream names them from the root.
        exc.path = prefix + exc.path if exc.path else child_path
        raise
    if crossed is not None:
        raise crossed
    response = run.response
    if response is None:
        response = AgentResponse(messages=finals, usage=usage)
    if response.status == "waiting":
        pending = [rebase_request(r, prefix, asks) for r in response.pending] or asked
        return response.model_copy(update={"pending": pending})
    if asked:
        # An agent that streams requests but does not say it waits still waits on them.
        return response.model_copy(update={"status": "waiting", "pending": asked})
    return response


def rebase_request(
    update: RequestInfoUpdate, prefix: AgentPath, asks: AgentPath | None = None
) -> RequestInfoUpdate:
    """`update` as seen from `prefix`: its path starts there, and its request id at `asks`
    (the place of the agent that ran it, `prefix` by default)."""
    asks = prefix if asks is None else asks
    if not prefix and not asks:
        return update
    return update.model_copy(
        update={
            "path": prefix + update.path,
            "request_id": "/".join((*asks, update.request_id)),
        }
    )


def _with_budget_left(options: RunOptions, tracker: BudgetTracker) -> RunOptions:
    """`options` with a budget of what `tracker` has left (seconds stay with the root's clock)."""
    budget = tracker.budget
    left = Budget(
        tokens=None if budget.tokens is None else max(0, budget.tokens - tracker.tokens),
        rounds=None if budget.rounds is None else max(0, budget.rounds - tracker.rounds),
    )
    return options.model_copy(update={"budget": left})


def _rebase(update: AgentUpdate, prefix: tuple[str, ...]) -> AgentUpdate:
    return update.model_copy(update={"path": prefix + update.path})


def completed(message: ChatMessage, ctx: RunContext) -> MessageCompleted:
    """The `MessageCompleted` item for `message` at `ctx.path`."""
    return MessageCompleted(message=message, path=ctx.path)


def __getattr__(name: str) -> Any:
    """`raf.agent.FunctionAgent`, as the layout names it (defined in `raf.function_agent`)."""
    if name == "FunctionAgent":
        from raf.function_agent import FunctionAgent

        return FunctionAgent
    raise AttributeError(f"module 'raf.agent' has no attribute {name!r}")
