"""`GroupChatBuilder`: participants take turns in one shared transcript, a selector choosing.

Each round the selector picks one speaker among the candidates, which sees the whole
transcript and adds its messages to it; the selector may end the chat instead (`EndChat`).
The termination condition is evaluated on the run's input and after every speaker, and the
chat stops at once when it holds, or when the round bound is reached. The transcript is the
session's conversation, so the next `run()` continues it, and the selector's position with it;
a run that fails leaves the selector's state as it was before the run.

A speaker picked twice in a row gets a request ending in the chat's attributed cue (a user
message), never in its own last answer, which servers such as llama.cpp would continue.

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

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, NamedTuple, Self, cast

from raf.agent import AgentMetadata, IAgent, check_agent_id
from raf.builders._hub import Coordinator, Floor, MemberStep, compile_hub, floor
from raf.builders._participants import check_agent, check_participants, free_id
from raf.builders.group_chat.selectors import (
    EndChat,
    FunctionSelector,
    Selector,
    SelectorFn,
    round_robin,
)
from raf.builders.group_chat.termination import ChatProgress, TerminationCondition
from raf.engine.context import NodeContext
from raf.engine.executors import conversation_of
from raf.engine.workflow import Workflow
from raf.messages import ChatMessage
from raf.providers.seat import attributed

__all__ = ["GroupChatBuilder"]

DEFAULT_ID = "workflow_group_chat"
DEFAULT_MAX_ROUNDS = 10
SELECTOR = "selector"

CandidateFn = Callable[[list[ChatMessage], list[AgentMetadata]], Sequence[str]]
"""`fn(transcript, participants) -> ids`: the members that may speak next."""


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
        self._repeats = True
        self._candidates: CandidateFn | None = None

    def add_agent(self, agent: IAgent) -> Self:
        """Add a participant.

        Raises:
            TypeError: `agent` is not an agent instance (a class, a `Workflow`, an id).
        """
        self._agents.append(check_agent("GroupChatBuilder", self._id, agent))
        return self

    def with_selector(
        self,
        selector: Selector | SelectorFn,
        *,
        allow_repeated_speaker: bool = True,
        candidates: CandidateFn | None = None,
    ) -> Self:
        """Choose speakers with `selector`: `round_robin()`, `llm_selector(provider)`, or a
        function `(transcript, candidates) -> id | EndChat` (sync or async).

        Args:
            selector: the selector.
            allow_repeated_speaker: False to keep the last speaker out of the next choice
                (unless it is the only candidate).
            candidates: `fn(transcript, participants) -> ids`, the members that may speak
                next; the selector chooses among them.

        Raises:
            TypeError: when `selector` is neither, or `candidates` is not callable.
        """
        if candidates is not None and not callable(candidates):
            raise TypeError(
                "with_selector(candidates=...) takes fn(transcript, participants) -> ids, "
                f"got {candidates!r}"
            )
        self._selector = selector if isinstance(selector, Selector) else FunctionSelector(selector)
        self._repeats = allow_repeated_speaker
        self._candidates = candidates
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
            ChatRules(self._termination, self._max_rounds, self._repeats, self._candidates),
            workflow_id=self._id,
        )
        members = [
            MemberStep(agent, coordinator=hub.id, cue=_cue(agent.id, self._id)) for agent in agents
        ]
        # The first selection, then a speaker and a selection (or the end) per round.
        return compile_hub(
            self._id, hub, members, kind="group_chat", max_supersteps=2 * self._max_rounds + 1
        )


class ChatRules(NamedTuple):
    """How a chat chooses and stops, as the builder configured it."""

    termination: TerminationCondition | None
    max_rounds: int
    repeats: bool
    """Whether the last speaker may be chosen again."""
    candidates: CandidateFn | None


class ChatSelector(Coordinator):
    """The chat's hub: ends the chat when it should, else picks the next speaker.

    Its output is the id of the speaker it picked (None when the chat ends). Its session
    state belongs to the selector (the round-robin position), but for the hub's copy of it
    taken when a turn starts (`Coordinator.begin_turn`).
    """

    kind: ClassVar[str] = "selector"

    def __init__(
        self,
        id: str,
        selector: Selector,
        participants: list[AgentMetadata],
        rules: ChatRules,
        *,
        workflow_id: str,
    ) -> None:
        super().__init__(id)
        self._selector = selector
        self._participants = participants
        self._ids = frozenset(p.id for p in participants)
        self._rules = rules
        self._workflow_id = workflow_id

    async def open(self, message: Any, ctx: NodeContext) -> str | None:
        """Start a run's chat: end it at once if its input says so, else pick a speaker."""
        self.begin_turn(ctx)
        transcript = conversation_of(message, self.id)
        return await self._next(
            floor(transcript, len(transcript), []), self._input(transcript), ctx
        )

    async def report(self, floor: Floor, ctx: NodeContext) -> str | None:
        """Continue after a speaker: end the chat if it should, else pick the next one."""
        return await self._next(floor, floor.said_last, ctx)

    async def _next(self, chat: Floor, new: list[ChatMessage], ctx: NodeContext) -> str | None:
        if self._ends(chat, new):
            return await self._finish(chat, ctx)
        candidates = self._candidates(chat)
        choice: Any = await self._selector.choose(chat.conversation, candidates, ctx)
        if isinstance(choice, EndChat):
            return await self._finish(chat, ctx, choice.message)
        if not isinstance(choice, str) or choice not in {c.id for c in candidates}:
            raise ValueError(
                f"the selector of group chat {self._workflow_id!r} chose {choice!r}, which is "
                f"not a participant it may choose now; choose one of "
                f"{[c.id for c in candidates]}, or return EndChat(...) to end the chat"
            )
        return await self.give(chat, choice, ctx)

    def _input(self, transcript: list[ChatMessage]) -> list[ChatMessage]:
        """The run's input: the messages at the end that no member of this chat wrote."""
        start = len(transcript)
        while start and transcript[start - 1].author not in self._ids:
            start -= 1
        return transcript[start:]

    def _candidates(self, chat: Floor) -> list[AgentMetadata]:
        rules = self._rules
        allowed = self._participants
        if rules.candidates is not None:
            named: Any = rules.candidates(chat.conversation, list(allowed))
            listed = isinstance(named, list | tuple | set | frozenset)
            ids: set[Any] = set(cast("Sequence[Any]", named)) if listed else set()
            allowed = [p for p in allowed if p.id in ids]
            if not allowed:
                raise ValueError(
                    f"the candidate filter of group chat {self._workflow_id!r} returned "
                    f"{named!r}, which names no participant; return a list of ids among "
                    f"{sorted(self._ids)}"
                )
        if not rules.repeats and len(allowed) > 1 and chat.trail:
            allowed = [p for p in allowed if p.id != chat.trail[-1]] or allowed
        return list(allowed)

    def _ends(self, chat: Floor, new: list[ChatMessage]) -> bool:
        rules = self._rules
        rounds = len(chat.trail)
        if rounds >= rules.max_rounds:
            return True
        if rules.termination is None:
            return False
        speaker = chat.trail[-1] if chat.trail else None
        progress = ChatProgress(chat.conversation, rounds=rounds, speaker=speaker or None, new=new)
        return rules.termination.is_met(progress)

    async def _finish(self, chat: Floor, ctx: NodeContext, final: str = "") -> None:
        added = chat.added
        if final:
            added.append(ChatMessage.assistant(final, author=self.id))
        await self.finish(added, ctx)


def _cue(member: str, chat_id: str) -> ChatMessage:
    """The chat's cue when `member` speaks again, so its request ends in a user turn."""
    return ChatMessage.user(
        attributed(chat_id, f"{member}, it is your turn again."), author=chat_id
    )
