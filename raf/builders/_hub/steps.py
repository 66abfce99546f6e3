"""The hub's two kinds of node: the coordinator, and one member step per participant.

The coordinator takes the run's input (`open`) and each member's report (`report`), and either
gives the floor to a member (`give`) or ends the run (`finish`). A coordinator whose session
state changes during a turn marks the turn's start (`begin_turn`): a turn that fails never
reaches `finish`, and the next turn's `begin_turn` puts the state back as the failed one found
it (DESIGN §12.1: a failed turn leaves the session as it was). A member step runs its agent
on the floor's conversation and sends the longer conversation on: back to the coordinator, or
(a handoff) straight to another member (`route`). `compile_hub` wires them onto the graph
engine: the coordinator first, an edge each way between it and every member, and the routes
members may take between themselves.

Example:
    >>> from raf import FunctionAgent
    >>> from raf.engine.context import NodeContext
    >>> class Once(Coordinator):
    ...     async def open(self, message, ctx: NodeContext):
    ...         return await self.give(floor(conversation_of(message, self.id), 1, []), "a", ctx)
    ...     async def report(self, floor, ctx: NodeContext):
    ...         await self.finish(floor.added, ctx)
    >>> member = MemberStep(FunctionAgent("a", lambda m: "hi"), coordinator="hub")
    >>> workflow = compile_hub("w", Once("hub"), [member], kind="demo", max_supersteps=3)
    >>> import anyio
    >>> anyio.run(workflow.as_agent().run("go").collect).text
    'hi'
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, cast

from pydantic import BaseModel

from raf.agent import IAgent
from raf.builders._hub.floor import Floor, floor, legacy_floor
from raf.engine.builder import WorkflowBuilder
from raf.engine.context import NodeContext
from raf.engine.executors import AgentExecutor, Executor, conversation_of
from raf.engine.workflow import Workflow
from raf.messages import ChatMessage
from raf.updates import AgentResponse

__all__ = ["TURN_START", "Coordinator", "MemberStep", "compile_hub"]

TURN_START = "before_run"
"""The key of the coordinator state's copy taken when a turn starts, dropped when it ends."""


class Coordinator(Executor):
    """The hub: opens each run, hears each member's report, gives the floor or ends the run.

    Subclasses say how: `open` for the run's input, `report` for a member's floor. Its output
    is the id of the member it gave the floor to (None when the run ended).
    """

    kind: ClassVar[str] = "coordinator"
    reports_as_responses: ClassVar[bool] = False
    """Whether a checkpoint written before the hub sent it members' reports as
    `AgentResponse`s (Magentic's did)."""

    def models(self) -> Sequence[type[BaseModel]]:
        """The floor, so a checkpoint brings it back as itself."""
        return (Floor,)

    async def handle(self, message: Any, ctx: NodeContext) -> Any:
        """A member's report goes to `report`; anything else is the run's input."""
        if type(message) is Floor:
            return await self.report(message, ctx)
        if isinstance(message, tuple) or (
            self.reports_as_responses and isinstance(message, AgentResponse)
        ):
            old = legacy_floor(message, to_member=False)
            if old is not None:
                return await self.report(old, ctx)
        return await self.open(message, ctx)

    async def open(self, message: Any, ctx: NodeContext) -> Any:
        """Start a run on its input (a message, text, a response or a list of those)."""
        raise NotImplementedError

    async def report(self, floor: Floor, ctx: NodeContext) -> Any:
        """Go on after the member last in `floor.trail` said `floor.said_last`."""
        raise NotImplementedError

    async def give(self, floor: Floor, member: str, ctx: NodeContext) -> str:
        """Give the floor to `member`; the node's output is its id."""
        await ctx.send(floor, to=member)
        return member

    def begin_turn(self, ctx: NodeContext) -> None:
        """Start a turn: put back the state a failed turn left behind, then keep a copy of the
        state as this turn finds it (dropped by `finish`).

        Call it where a new turn really starts, not where a handling re-runs with a human's
        answer (that turn goes on).
        """
        state = ctx.state
        before = state.pop(TURN_START, None)
        if isinstance(before, dict):
            state.clear()
            state.update(cast("dict[str, Any]", before))
        state[TURN_START] = copy.deepcopy(state)

    async def finish(self, messages: list[ChatMessage], ctx: NodeContext) -> None:
        """End the run: `messages` are its response, and the turn's state stands."""
        ctx.state.pop(TURN_START, None)
        await ctx.yield_output(messages)


class MemberStep(AgentExecutor):
    """One participant: speaks on the floor's conversation and sends the longer one on.

    Args:
        agent: the participant.
        coordinator: the hub's coordinator node.
        runs: what the step runs (the agent with extra tools, say); `agent` by default.
        cue: a user message added to the request when the member spoke last too, so the
            request ends in a user turn rather than its own answer (which servers such as
            llama.cpp continue).
    """

    def __init__(
        self,
        agent: IAgent,
        *,
        coordinator: str,
        runs: IAgent | None = None,
        cue: ChatMessage | None = None,
    ) -> None:
        super().__init__(agent, output_response=False)
        self._coordinator = coordinator
        self._runs = agent if runs is None else runs
        self._cue = cue

    @property
    def targets(self) -> list[str]:
        """Members this one may give the floor to directly (none: it reports back)."""
        return []

    def models(self) -> Sequence[type[BaseModel]]:
        """The floor, so a checkpoint brings it back as itself."""
        return (Floor,)

    async def handle(self, message: Any, ctx: NodeContext) -> AgentResponse:
        """Run the agent on the conversation, then send the floor on."""
        given = self._floor(message)
        seen = given.conversation
        trail = given.trail
        if self._cue is not None and trail and trail[-1] == self.id:
            seen = [*seen, self._cue]
        response = await ctx.invoke_agent(self._runs, seen)
        after = given.after(self.id, response.messages)
        target = self.route(after, response)
        await ctx.send(after, to=self._coordinator if target is None else target)
        return response

    def route(self, floor: Floor, response: AgentResponse) -> str | None:
        """The member to give the floor to next, or None to report back to the coordinator."""
        return None

    def _floor(self, message: Any) -> Floor:
        if type(message) is Floor:
            return message
        old = legacy_floor(message, to_member=True)
        if old is not None:
            return old
        # A Magentic member's input before the hub: the conversation it was briefed with.
        return floor(conversation_of(message, self.id), 0, [])


def compile_hub(
    workflow_id: str,
    coordinator: Coordinator,
    members: Iterable[MemberStep],
    *,
    kind: str,
    max_supersteps: int,
) -> Workflow:
    """The workflow of `coordinator` and `members`, starting at the coordinator.

    Edges, in this order (the workflow's shape, which checkpoints are checked against): for
    each member, coordinator -> member, member -> each of its `targets`, member ->
    coordinator.
    """
    steps = list(members)
    builder = WorkflowBuilder(workflow_id).add_executor(coordinator)
    for step in steps:
        builder.add_executor(step)
    for step in steps:
        builder.add_edge(coordinator, step)
        for target in step.targets:
            builder.add_edge(step, target)
        builder.add_edge(step, coordinator)
    builder.set_max_supersteps(max_supersteps)
    return builder.set_start(coordinator).build(check_structure=False).with_kind(kind)
