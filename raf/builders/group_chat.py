"""`GroupChatBuilder`: participants take turns in one shared transcript, a selector choosing.

Each round the selector picks one speaker, which sees the whole transcript and adds its
messages to it. After every speaker the termination condition is evaluated and the chat stops
at once when it holds, or when the round bound is reached. The transcript is the session's
conversation, so the next `run()` continues it, and the selector's position with it.

Example:
    >>> import anyio
    >>> from raf import FunctionAgent, TextMention
    >>> writer = FunctionAgent("writer", lambda m: "A draft.")
    >>> critic = FunctionAgent("critic", lambda m: "Good. APPROVED")
    >>> chat = (
    ...     GroupChatBuilder(id="review").add_agent(writer).add_agent(critic)
    ...     .with_termination(TextMention("APPROVED")).build().as_agent()
    ... )
    >>> [m.author for m in anyio.run(chat.run("Write a haiku").collect).messages]
    ['writer', 'critic']
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple, Self, cast

from raf.agent import AgentMetadata, IAgent, check_agent_id
from raf.builders._participants import check_agent, check_participants, free_id
from raf.builders.group_chat_selectors import FunctionSelector, Selector, SelectorFn, round_robin
from raf.builders.group_chat_termination import ChatProgress, TerminationCondition
from raf.engine.builder import WorkflowBuilder
from raf.engine.context import NodeContext
from raf.engine.executors import AgentExecutor, Executor, conversation_of
from raf.engine.workflow import Workflow
from raf.messages import ChatMessage
from raf.updates import AgentResponse

__all__ = ["GroupChatBuilder"]

DEFAULT_ID = "workflow_group_chat"
DEFAULT_MAX_ROUNDS = 10
SELECTOR = "selector"


class GroupChatBuilder:
    """Builds a workflow in which a selector picks one speaker per round.

    Selectors: `round_robin()` (the default), a function `(transcript, participants) -> id`,
    or `llm_selector(provider)`. Termination conditions compose with `|` and `&`; they and
    the round bound count per `run()`.

    Args:
        id: the workflow id (`workflow_group_chat` by default).
    """

    def __init__(self, id: str | None = None) -> None:
        self._id = check_agent_id(id) if id is not None else DEFAULT_ID
        self._agents: list[IAgent] = []
        self._selector: Selector = round_robin()
        self._termination: TerminationCondition | None = None
        self._max_rounds = DEFAULT_MAX_ROUNDS

    def add_agent(self, agent: IAgent) -> Self:
        """Add a participant.

        Raises:
            TypeError: `agent` is not an agent instance (a class, a `Workflow`, an id).
        """
        self._agents.append(check_agent("GroupChatBuilder", self._id, agent))
        return self

    def with_selector(self, selector: Selector | SelectorFn) -> Self:
        """Choose speakers with `selector`: `round_robin()`, `llm_selector(provider)`, or a
        function `(transcript, participants) -> id` (sync or async).

        Raises:
            TypeError: when `selector` is neither.
        """
        self._selector = selector if isinstance(selector, Selector) else FunctionSelector(selector)
        return self

    def with_termination(self, condition: TerminationCondition) -> Self:
        """Stop when `condition` holds, evaluated after every speaker.

        Raises:
            TypeError: when `condition` is not a `TerminationCondition`.
        """
        if not isinstance(condition, TerminationCondition):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                "with_termination takes a condition such as TextMention('TERMINATE') | "
                f"MaxRounds(8); for a function, wrap it in FunctionCondition(fn); got {condition!r}"
            )
        self._termination = condition
        return self

    def with_max_rounds(self, n: int) -> Self:
        """Stop after `n` speakers in a run, whatever the condition says (10 by default).

        Raises:
            ValueError: when `n` is below 1.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"with_max_rounds needs a count of 1 or more, got {n!r}")
        self._max_rounds = n
        return self

    def build(self) -> Workflow:
        """Check the participants and compile the chat onto the graph engine.

        Raises:
            GraphValidationError: no participants, or two with the same id.
        """
        agents = check_participants("GroupChatBuilder", self._id, self._agents)
        ids = [a.id for a in agents]
        hub = ChatSelector(
            free_id(SELECTOR, ids),
            self._selector,
            [a.metadata for a in agents],
            termination=self._termination,
            max_rounds=self._max_rounds,
            workflow_id=self._id,
        )
        builder = WorkflowBuilder(self._id).add_executor(hub)
        members = [ChatMember(agent, hub.id) for agent in agents]
        for member in members:
            builder.add_executor(member)
        for member in members:
            builder.add_edge(hub, member).add_edge(member, hub)
        # The first selection, then a speaker and a selection (or the end) per round.
        builder.set_max_supersteps(2 * self._max_rounds + 1)
        return builder.set_start(hub).build(check_structure=False).with_kind("group_chat")


class Round(NamedTuple):
    """What travels between the selector and the speakers during one run."""

    start: int
    """Where this run's input ends in `transcript` (the run's response follows it)."""
    transcript: list[ChatMessage]
    """The conversation so far."""
    rounds: int
    """Speakers that spoke in this run."""
    speaker: str
    """The last speaker of this run ("" before the first)."""


class ChatSelector(Executor):
    """The chat's hub: ends the chat when it should, else picks the next speaker.

    Its output is the id of the speaker it picked (None when the chat ends). Its session
    state belongs to the selector (the round-robin position).
    """

    kind: ClassVar[str] = "selector"

    def __init__(
        self,
        id: str,
        selector: Selector,
        participants: list[AgentMetadata],
        *,
        termination: TerminationCondition | None,
        max_rounds: int,
        workflow_id: str,
    ) -> None:
        super().__init__(id)
        self._selector = selector
        self._participants = participants
        self._ids = frozenset(p.id for p in participants)
        self._termination = termination
        self._max_rounds = max_rounds
        self._workflow_id = workflow_id

    async def handle(self, message: Any, ctx: NodeContext) -> str | None:
        """Start a run's chat, or continue it after a speaker."""
        if isinstance(message, tuple):
            chat = Round._make(cast("tuple[Any, ...]", message))
            if self._ends(chat):
                await ctx.yield_output(chat.transcript[chat.start :])
                return None
        else:
            transcript = conversation_of(message, self.id)
            chat = Round(len(transcript), transcript, 0, "")
        speaker = await self._selector.choose(chat.transcript, list(self._participants), ctx)
        if speaker not in self._ids:
            raise ValueError(
                f"the selector of group chat {self._workflow_id!r} chose {speaker!r}, which is "
                f"not a participant; choose one of {sorted(self._ids)}"
            )
        await ctx.send(chat, to=speaker)
        return speaker

    def _ends(self, chat: Round) -> bool:
        if chat.rounds >= self._max_rounds:
            return True
        condition = self._termination
        if condition is None:
            return False
        progress = ChatProgress(chat.transcript, rounds=chat.rounds, speaker=chat.speaker or None)
        return condition.is_met(progress)


class ChatMember(AgentExecutor):
    """One participant: speaks on the whole transcript, then hands back to the selector."""

    def __init__(self, agent: IAgent, selector: str) -> None:
        super().__init__(agent, output_response=False)
        self._selector = selector

    async def handle(self, message: Any, ctx: NodeContext) -> AgentResponse:
        """Run the agent on the transcript and send the longer transcript back."""
        chat = Round._make(cast("tuple[Any, ...]", message))
        response = await ctx.invoke_agent(self.as_agent(), chat.transcript)
        transcript = [*chat.transcript, *response.messages]
        await ctx.send(Round(chat.start, transcript, chat.rounds + 1, self.id), to=self._selector)
        return response
