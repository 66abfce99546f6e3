"""`AgentRun` (the handle `IAgent.run` returns), `RunContext` (what a run hands its agents) and
`Turn` (what the whole tree of one run shares).

A run's work happens in a task group owned by `AgentRun.__aenter__`; its updates reach the
consumer through one bounded buffer, so a slow consumer back-pressures the producers and
leaving the `async with` block cancels every task of the run.

Example:
    >>> import anyio
    >>> from raf import FunctionAgent
    >>> agent = FunctionAgent("echo", lambda messages: messages[-1].text)
    >>> anyio.run(lambda: agent.run("hi").collect()).text
    'hi'
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from raf._defaults import new_dict, new_list, new_set
from raf._streaming import ProducerStream, single_exceptions
from raf.providers.seat import Prefixes, Presented
from raf.updates import AgentPath, AgentResponse, AgentUpdate, ValueT

if TYPE_CHECKING:
    from raf.agent import RunOptions
    from raf.budget import BudgetTracker
    from raf.session import Session
    from raf.steps import CallJournal, DurableSteps
    from raf.traced import RunTelemetry

Emit = Callable[[AgentUpdate], Awaitable[None]]
"""Sends one update toward the consumer of the run."""


async def discard(update: AgentUpdate) -> None:
    """An `Emit` that drops every update (for `collect()`)."""


class OuterRun(Protocol):
    """The outermost workflow run of a tree, as the nested runs in it see it.

    The engine implements it (`raf.engine.protocol.RootRun`); the core only passes it down.
    """

    @property
    def checkpoints(self) -> bool:
        """Whether the run saves checkpoints (its session has a store)."""
        ...

    async def checkpoint_within(self) -> None:
        """Save a checkpoint now, inside the superstep in progress (a nested workflow
        finished one of its own supersteps)."""
        ...

    @property
    def journal(self) -> CallJournal | None:
        """Where the run records its tool calls (when it checkpoints to a store with an event
        log), so a resume never repeats one silently (`raf.tools.journal`)."""
        ...


@dataclass(slots=True)
class Turn:
    """What one top-level run shares with every layer of its agent tree.

    The root of the run creates it; nested agents get the same object through their
    `RunContext`. Every field is typed: nothing travels in a string-keyed dict.
    """

    answers: dict[str, Any] = field(default_factory=new_dict)
    """Answers to human requests this turn gives, by request id (ids carry full paths)."""
    errors: set[str] = field(default_factory=new_set)
    """Requests of `answers` answered with an error result (a tool message with `is_error`:
    the client's tool failed), which a client tool's caller sees as one."""
    asked: list[str] = field(default_factory=new_list)
    """Ids of the requests streamed in this turn, in stream order."""
    engine: OuterRun | None = None
    """The outermost workflow run of the tree, once one started (only it checkpoints)."""
    presented: Presented = field(default_factory=lambda: Presented())
    """Other agents' messages as the run's models are shown them, built once for all seats."""
    prefixes: Prefixes = field(default_factory=lambda: Prefixes())
    """How the start of a conversation was shown to the run's models, reused by later seats."""
    telemetry: RunTelemetry | None = None
    """The run's spans and metrics, when it is traced (`raf.tracing`); decided once per run."""
    durable: DurableSteps | None = None
    """Where the run's model and tool calls go as recorded steps (`raf.durable`); None runs
    them locally."""


@dataclass(slots=True)
class RunContext:
    """What an agent gets when it runs inside a run: where it is, and where updates go.

    `path` is this agent's path from the agent `run()` was called on; items an agent emits
    carry it. `session` holds state keyed by path; `turn` is shared by the whole run's tree;
    `call` names the workflow node's call that runs this agent, when a checkpointing engine
    runs it (so a resumed superstep finds the nested run it kept). `place` is where the
    agent's requests and waiting state go: its path, with the node's call in it where one
    agent id runs in several calls of a run (`("outer", "n@0#1", "inner")`).
    """

    path: AgentPath
    session: Session
    options: RunOptions
    emit: Emit
    budget: BudgetTracker | None = None
    turn: Turn = field(default_factory=Turn)
    call: str | None = None
    place: AgentPath = ()

    def __post_init__(self) -> None:
        if not self.place:
            self.place = self.path

    def child(
        self, agent_id: str, call: str | None = None, place: AgentPath | None = None
    ) -> RunContext:
        """The context of a direct child agent `agent_id` (run by the node call `call`, at
        `place`; below this agent's place by default)."""
        return RunContext(
            self.path + (agent_id,),
            self.session,
            self.options,
            self.emit,
            self.budget,
            self.turn,
            call,
            self.place + (agent_id,) if place is None else place,
        )

    def with_emit(self, emit: Emit) -> RunContext:
        """The same context sending updates to `emit`."""
        return RunContext(
            self.path,
            self.session,
            self.options,
            emit,
            self.budget,
            self.turn,
            self.call,
            self.place,
        )

    def key(self, name: str) -> str:
        """The session key of `name` for this agent."""
        return "/".join(self.path) + "#" + name

    def charge_round(self) -> None:
        """Count one model call against the run's budget."""
        if self.budget is not None:
            self.budget.charge_round(self.path)

    def charge_tokens(self, tokens: int) -> None:
        """Count `tokens` against the run's budget."""
        if self.budget is not None:
            self.budget.charge_tokens(tokens, self.path)


class AgentRun(ProducerStream[AgentUpdate, AgentResponse[ValueT]]):
    """One run of an agent: `await` it for the response, or `async with` it to stream.

    `await agent.run(m)` and `await agent.run(m).collect()` both run to the end and return the
    `AgentResponse`. Generic in the type of the response's value (`AgentRun` alone is
    `AgentRun[Any]`).

    Example:
        >>> async def main(agent):
        ...     response = await agent.run("hello")
        ...     async with agent.run("hello again") as stream:
        ...         async for update in stream:
        ...             print(update.type, update.path)
    """

    __slots__ = ()

    misuse = (
        "an AgentRun streams inside its context manager: write "
        "`async with agent.run(messages) as stream: async for update in stream: ...`, "
        "or `await agent.run(messages)` for the response"
    )

    def __await__(self) -> Generator[Any, Any, AgentResponse[ValueT]]:
        return self.collect().__await__()

    if not TYPE_CHECKING:  # only at run time: type checkers go on reporting a plain `with`

        def __enter__(self):
            raise TypeError(
                "an AgentRun is entered with `async with`, not `with`: write "
                "`async with agent.run(messages) as stream:` inside an async function, or "
                "`response = await agent.run(messages)` for the response"
            )

        def __exit__(self, *exc_info):  # never reached: `__enter__` raises
            return None

    @property
    def response(self) -> AgentResponse[ValueT] | None:
        """The collected response, once the run ended without error."""
        return self.result

    async def collect(self) -> AgentResponse[ValueT]:
        """Run to the end, discarding the stream, and return the response."""
        self._claim()
        self._state = "done"
        await self._admit()
        try:
            # As when streaming: a lone exception comes out as itself, with its own cause.
            with single_exceptions():
                response = await self._body(discard)
        finally:
            await self._dismiss()
        self.result = response
        return response
