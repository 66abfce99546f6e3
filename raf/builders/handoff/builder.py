"""`HandoffBuilder`: agents pass the conversation to one another through handoff tools.

Each ReAct participant gets a synthetic tool `handoff_to_<id>` per agent it may hand off to
(every other participant, unless `add_handoff` declares the routes); calling it moves control,
with the whole conversation, to that agent. The turn ends when the active agent answers
without a handoff, and the next turn on the session starts at that agent when it can hand off,
else at the triage agent (a `FunctionAgent` or a workflow would otherwise keep every later
turn to itself); `with_resume_at("triage")` always starts at the triage agent,
`with_resume_at("last")` always at the agent that answered. `build()` warns
(`UnreachableHandoffWarning`) about agents, and so routes, that no handoff can reach.

Example:
    >>> import anyio
    >>> from raf import FunctionAgent, ReactAgent
    >>> from raf.testing import ScriptedProvider, text, tool_calls
    >>> model = ScriptedProvider([tool_calls(("handoff_to_billing", {}))])
    >>> triage = ReactAgent("triage", model, "Route the customer.")
    >>> billing = FunctionAgent("billing", lambda m: "Refund issued.", "Refunds and invoices.")
    >>> desk = HandoffBuilder(triage, id="desk").add_agent(billing).build().as_agent()
    >>> anyio.run(desk.run("I was charged twice").collect).text
    'Refund issued.'
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Self, cast

from raf.agent import IAgent, check_agent_id
from raf.builders._hub import Coordinator, Floor, MemberStep, compile_hub, floor
from raf.builders._participants import check_agent, check_participants, free_id
from raf.engine.context import NodeContext
from raf.engine.executors import conversation_of
from raf.engine.workflow import Workflow
from raf.errors import GraphValidationError, HandoffLimitExceeded
from raf.messages import ChatMessage
from raf.react.agent import ReactAgent
from raf.react.exits import ExitTool
from raf.tools.definition import ToolDefinition
from raf.updates import AgentResponse

__all__ = ["HandoffBuilder", "ResumeAt", "UnreachableHandoffWarning"]

DEFAULT_ID = "workflow_handoff_triage"
DEFAULT_MAX_HANDOFFS = 10
ROUTER = "router"
TOOL_PREFIX = "handoff_to_"

ResumeAt = Literal["active", "triage", "last"]
"""Where a turn starts: at the agent that ended the last turn if it can hand off (else at the
triage agent), always at the triage agent, or always at the agent that ended the last turn."""


class UnreachableHandoffWarning(UserWarning):
    """`HandoffBuilder.build()` found participants that no handoff route reaches from the
    triage agent: they, and the routes from them, can never be taken."""


class HandoffBuilder:
    """Builds a workflow in which agents hand the conversation to one another.

    Every ReAct participant gets a tool `handoff_to_<id>` per allowed target, described by
    the target's description; all participants may hand off to all others until the first
    `add_handoff`, after which only declared routes exist. A participant that is not a
    `ReactAgent` (a workflow agent, any `IAgent`) is a terminal specialist: it gets no tools
    and its answer ends the turn, after which the next turn starts at the triage agent again
    (unless `with_resume_at("last")`). Two handoff calls in one answer: the first takes effect,
    the others get an error result saying so.

    Args:
        triage: the agent every conversation starts at.
        id: the workflow id (`workflow_handoff_triage` by default).
    """

    def __init__(self, triage: IAgent, id: str | None = None) -> None:
        self._id = check_agent_id(id) if id is not None else DEFAULT_ID
        self._agents: list[IAgent] = [
            check_agent("HandoffBuilder", self._id, triage, where="HandoffBuilder(triage)")
        ]
        self._routes: dict[str, list[str]] = {}
        self._max_handoffs = DEFAULT_MAX_HANDOFFS
        self._resume_at: ResumeAt = "active"

    def add_agent(self, agent: IAgent) -> Self:
        """Add a participant.

        Raises:
            TypeError: `agent` is not an agent instance (a class, a `Workflow`, an id).
        """
        self._agents.append(check_agent("HandoffBuilder", self._id, agent))
        return self

    def add_handoff(self, source: IAgent | str, targets: Sequence[IAgent | str]) -> Self:
        """Let `source` hand off to each of `targets` (agents or their ids).

        Once any route is declared, only declared routes get handoff tools.

        Raises:
            TypeError: when `targets` is a single agent or id instead of a sequence.
        """
        if isinstance(targets, str | IAgent):
            raise TypeError(
                f"add_handoff({_id_of(source)!r}, ...): targets is a sequence of agents or "
                f"ids; write add_handoff(source, [{_id_of(targets)!r}])"
            )
        routes = self._routes.setdefault(_id_of(source), [])
        routes.extend(t for t in map(_id_of, targets) if t not in routes)
        return self

    def with_max_handoffs(self, n: int) -> Self:
        """Allow at most `n` handoffs per turn; one more raises `HandoffLimitExceeded`.

        Raises:
            ValueError: when `n` is negative.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"with_max_handoffs needs a count of 0 or more, got {n!r}")
        self._max_handoffs = n
        return self

    def with_resume_at(self, at: ResumeAt) -> Self:
        """Start each turn at the agent that ended the last one when it can hand off, else at
        the triage agent (`"active"`, the default); always at the triage agent (`"triage"`);
        or always at the agent that ended the last one, even one that cannot hand off
        (`"last"`).

        Raises:
            ValueError: for any other value.
        """
        if at not in ("active", "triage", "last"):
            raise ValueError(f'with_resume_at takes "active", "triage" or "last", got {at!r}')
        self._resume_at = at
        return self

    def build(self) -> Workflow:
        """Check participants and routes and compile the handoffs onto the graph engine.

        Warns:
            UnreachableHandoffWarning: when no route leads from the triage agent to some
                participants (their routes can never be taken).

        Raises:
            GraphValidationError: a participant that is not an agent, duplicate ids, a route
                naming an unknown agent or the agent itself, a route from an agent that cannot
                hand off, or an id that cannot be part of a tool name.
        """
        agents = check_participants("HandoffBuilder", self._id, self._agents)
        by_id = {agent.id: agent for agent in agents}
        routes = self._checked_routes(by_id)
        ids = list(by_id)
        self._warn_unreachable(routes, ids[0])
        settled = frozenset(i for i in ids if routes[i])
        router = Router(free_id(ROUTER, ids), ids[0], settled, self._resume_at, frozenset(ids))
        steps = [
            HandoffStep(
                agent,
                self._view(agent, self._exits(routes[agent.id], by_id)),
                targets=routes[agent.id],
                router=router.id,
                workflow_id=self._id,
                max_handoffs=self._max_handoffs,
            )
            for agent in agents
        ]
        # The router, the first agent, one superstep per handoff, the router again.
        return compile_hub(
            self._id, router, steps, kind="handoff", max_supersteps=self._max_handoffs + 3
        )

    def _warn_unreachable(self, routes: dict[str, list[str]], triage: str) -> None:
        reached = {triage}
        frontier = [triage]
        while frontier:
            for target in routes[frontier.pop()]:
                if target not in reached:
                    reached.add(target)
                    frontier.append(target)
        unreachable = [i for i in routes if i not in reached]
        if not unreachable:
            return
        dead = [f"{s} -> {t}" for s in unreachable for t in routes[s]]
        never = f"; so the routes {', '.join(dead)} can never be taken" if dead else ""
        warnings.warn(
            f"HandoffBuilder {self._id!r}: no handoff route leads from the triage agent "
            f"{triage!r} to {', '.join(map(repr, unreachable))}{never}; add_handoff() a route "
            "to them, or leave them out",
            UnreachableHandoffWarning,
            stacklevel=3,
        )

    def _checked_routes(self, by_id: dict[str, IAgent]) -> dict[str, list[str]]:
        """The targets of each participant; declared routes checked against the participants."""
        if not self._routes:
            return {
                agent_id: [t for t in by_id if t != agent_id] if _hands_off(agent) else []
                for agent_id, agent in by_id.items()
            }
        unknown = sorted(
            {s for s in self._routes if s not in by_id}
            | {t for targets in self._routes.values() for t in targets if t not in by_id}
        )
        if unknown:
            raise GraphValidationError(
                f"HandoffBuilder {self._id!r}: handoff routes name agents that are not "
                f"participants: {', '.join(map(repr, unknown))}; add_agent() them first",
                ids=tuple(unknown),
            )
        looping = sorted(s for s, targets in self._routes.items() if s in targets)
        if looping:
            raise GraphValidationError(
                f"HandoffBuilder {self._id!r}: {', '.join(map(repr, looping))} would hand off "
                "to itself; remove it from its own targets",
                ids=tuple(looping),
            )
        terminal = sorted(s for s, t in self._routes.items() if t and not _hands_off(by_id[s]))
        if terminal:
            raise GraphValidationError(
                f"HandoffBuilder {self._id!r}: {', '.join(map(repr, terminal))} cannot hand "
                "off (only a ReactAgent gets handoff tools; any other agent is a terminal "
                "specialist whose answer ends the turn); remove its add_handoff routes",
                ids=tuple(terminal),
            )
        return {agent_id: self._routes.get(agent_id, []) for agent_id in by_id}

    def _view(self, agent: IAgent, exits: tuple[ExitTool, ...]) -> IAgent:
        """What the step runs: the agent, with its handoff tools when it has any."""
        if not exits or not isinstance(agent, ReactAgent):
            return agent
        try:
            return cast("ReactAgent[Any]", agent).with_exits(exits)
        except ValueError as exc:
            raise GraphValidationError(
                f"HandoffBuilder {self._id!r}: {exc}; handoff tools are named handoff_to_<id>",
                ids=(agent.id,),
            ) from exc

    def _exits(self, targets: list[str], by_id: dict[str, IAgent]) -> tuple[ExitTool, ...]:
        exits: list[ExitTool] = []
        for target in targets:
            name = TOOL_PREFIX + target
            try:
                definition = ToolDefinition(
                    name=name,
                    description=by_id[target].metadata.description
                    or f"Hand the conversation to {target}.",
                )
            except ValueError as exc:
                raise GraphValidationError(
                    f"HandoffBuilder {self._id!r}: agent id {target!r} cannot name the tool "
                    f"{name!r} (tool names are 1-64 letters, digits, '_' or '-'); give the "
                    "agent such an id",
                    ids=(target,),
                ) from exc
            exits.append(ExitTool(definition, f"Transferred to {target}, who takes over now."))
        return tuple(exits)


class Router(Coordinator):
    """Starts each turn at the active agent, and records where it ended.

    Its session state is `{"active": <agent id>}`: the agent that ended the last turn.
    """

    kind: ClassVar[str] = "router"

    def __init__(
        self,
        id: str,
        triage: str,
        settled: frozenset[str],
        resume_at: ResumeAt,
        ids: frozenset[str],
    ) -> None:
        super().__init__(id)
        self._triage = triage
        # A turn resumes at an agent that can hand off; one that cannot would keep every
        # later turn to itself.
        self._resumable = ids if resume_at == "last" else settled
        self._resume_at: ResumeAt = resume_at

    async def open(self, message: Any, ctx: NodeContext) -> str:
        """Route a new turn: the output is the agent it starts at."""
        conversation = conversation_of(message, self.id)
        active: Any = ctx.state.get("active") if self._resume_at != "triage" else None
        first = active if active in self._resumable else self._triage
        return await self.give(floor(conversation, len(conversation), []), first, ctx)

    async def report(self, floor: Floor, ctx: NodeContext) -> None:
        """End the turn at the agent that answered without handing off."""
        ctx.state["active"] = floor.trail[-1]
        await self.finish(floor.added, ctx)


class HandoffStep(MemberStep):
    """One participant: runs its agent, then hands off or ends the turn."""

    def __init__(
        self,
        agent: IAgent,
        runs: IAgent,
        *,
        targets: list[str],
        router: str,
        workflow_id: str,
        max_handoffs: int,
    ) -> None:
        super().__init__(agent, coordinator=router, runs=runs)
        self._exits = {TOOL_PREFIX + target: target for target in targets}
        self._workflow_id = workflow_id
        self._max_handoffs = max_handoffs

    @property
    def targets(self) -> list[str]:
        """The agents this one may hand off to."""
        return list(self._exits.values())

    def route(self, floor: Floor, response: AgentResponse) -> str | None:
        """The agent the answer handed off to (None: the answer ends the turn).

        Raises:
            HandoffLimitExceeded: when this handoff is one more than the turn allows.
        """
        target = self._handoff(response.messages)
        if target is not None and len(floor.trail) > self._max_handoffs:
            trail = " -> ".join([*floor.trail, target])
            raise HandoffLimitExceeded(
                f"handoff workflow {self._workflow_id!r} went past its limit of "
                f"{self._max_handoffs} handoffs in one turn ({trail}); raise "
                "with_max_handoffs(), or tell the agents when to answer instead of handing off"
            )
        return target

    def _handoff(self, messages: list[ChatMessage]) -> str | None:
        """The target of the handoff call that took effect (its result is not an error)."""
        exits = self._exits
        if not exits:
            return None
        calls: dict[str, str] = {}
        for message in messages:
            for content in message.contents:
                if content.type == "tool_call" and content.name in exits:
                    calls[content.call_id] = exits[content.name]
                elif content.type == "tool_result" and not content.is_error:
                    target = calls.get(content.call_id)
                    if target is not None:
                        return target
        return None


def _hands_off(agent: IAgent) -> bool:
    return isinstance(agent, ReactAgent)


def _id_of(ref: Any) -> str:
    if isinstance(ref, str):
        return ref
    if isinstance(ref, IAgent):
        return ref.id
    return repr(ref)
